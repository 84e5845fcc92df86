// RUN: kiln-opt %s --kiln-vectorize="vector-width=8" --split-input-file | FileCheck %s

// Elementwise with a row value broadcast along the innermost loop: vector
// loads, a splat, the body on vectors, and a scalar generic for the last 3.
// CHECK-LABEL: func @scale
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = ({{.*}}) to (%c4, %c16) step (%c1, %c8)
// CHECK: vector.load %{{.*}} : memref<4x19xf32>, vector<8xf32>
// CHECK: memref.load %{{.*}} : memref<4xf32>
// CHECK: vector.broadcast %{{.*}} : f32 to vector<8xf32>
// CHECK: math.exp %{{.*}} : vector<8xf32>
// CHECK: vector.store
// CHECK: memref.subview %{{.*}}[0, 16] [4, 3] [1, 1]
// CHECK: linalg.generic
func.func @scale(%x: memref<4x19xf32>, %r: memref<4xf32>, %out: memref<4x19xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %r : memref<4x19xf32>, memref<4xf32>) outs(%out : memref<4x19xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %0 = arith.mulf %a, %b : f32
    %1 = math.exp %0 : f32
    linalg.yield %1 : f32
  }
  return
}

// -----

// A reassociable sum over the innermost loop keeps a vector accumulator.
// CHECK-LABEL: func @rowsum
// CHECK: scf.parallel (%[[I:.*]]) =
// CHECK: scf.for {{.*}} -> (vector<8xf32>)
// CHECK: vector.reduction <add>
// CHECK: scf.for {{.*}} -> (f32)
// CHECK: memref.store
func.func @rowsum(%x: memref<4x20xf32>, %out: memref<4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : memref<4x20xf32>) outs(%out : memref<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %0 = arith.addf %a, %acc fastmath<reassoc> : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// Without reassociation a float sum stays in order; a transposed read is
// not a vector load. Both keep the scalar lowering.
// CHECK-LABEL: func @untouched
// CHECK-COUNT-2: linalg.generic
func.func @untouched(%x: memref<20x20xf32>, %out: memref<20xf32>, %t: memref<20x20xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : memref<20x20xf32>) outs(%out : memref<20xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %0 = arith.addf %a, %acc : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : memref<20x20xf32>) outs(%t : memref<20x20xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  return
}

// -----

// A kernel that only writes a value from outside its body (an iota along a
// size-1 dim, folded to zeros) stores splats of it.
// CHECK-LABEL: func @yields_outside_value
// CHECK: %[[Z:.*]] = arith.constant 0.0
// CHECK: scf.parallel
// CHECK: %[[V:.*]] = vector.broadcast %[[Z]] : f32 to vector<8xf32>
// CHECK: vector.store %[[V]]
// CHECK: linalg.generic
func.func @yields_outside_value(%out: memref<1x13xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} outs(%out : memref<1x13xf32>) {
  ^bb0(%o: f32):
    linalg.yield %zero : f32
  }
  return
}
