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

// -----

// A flip along the innermost loop: the lanes' last iteration's index
// (19 - (j + 7)) is the vector's first element, and a shuffle reverses it.
// The tail reads the whole input at 3 - j. A read at twice the loop index
// keeps the scalar lowering.
// CHECK-DAG: #[[REV:.*]] = affine_map<(d0, d1) -> (-d1 + 19)>
// CHECK-DAG: #[[TAIL:.*]] = affine_map<(d0, d1) -> (d0, -d1 + 3)>
// CHECK-LABEL: func @flip
// CHECK: scf.parallel (%[[I:.*]], %[[J:.*]]) = ({{.*}}) to (%c4, %c16) step (%c1, %c8)
// CHECK: %[[LAST:.*]] = arith.addi %[[J]], %c7
// CHECK: %[[R:.*]] = affine.apply #{{.*}}(%[[I]], %[[LAST]])
// CHECK: %[[K:.*]] = affine.apply #[[REV]](%[[I]], %[[LAST]])
// CHECK: %[[V:.*]] = vector.load %{{.*}}[%[[R]], %[[K]]] : memref<4x20xf32>, vector<8xf32>
// CHECK: vector.shuffle %[[V]], %[[V]] [7, 6, 5, 4, 3, 2, 1, 0]
// CHECK: math.exp %{{.*}} : vector<8xf32>
// CHECK: linalg.generic {indexing_maps = [#[[TAIL]], #{{.*}}]
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel"]} ins(%{{.*}} : memref<4x40xf32>)
func.func @flip(%x: memref<4x20xf32>, %out: memref<4x19xf32>, %y: memref<4x40xf32>, %strided: memref<4x19xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, 19 - d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : memref<4x20xf32>) outs(%out : memref<4x19xf32>) {
  ^bb0(%a: f32, %o: f32):
    %0 = math.exp %a : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1 * 2)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%y : memref<4x40xf32>) outs(%strided : memref<4x19xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  return
}

// -----

// An index_select's rows (the body reads a buffer at a row an input picks):
// the row index, read once per row and clamped, stays a scalar; the row is
// read as vectors along the innermost loop. Left alone: the loop's index
// as an outer index (a column), and a row that would leave a scalar tail,
// whose linalg.index would count from the tail's start.
// CHECK-LABEL: func @row_reads
// CHECK: scf.parallel (%[[I:.*]], %[[J:.*]]) = ({{.*}}) to (%c4, %c16) step (%c1, %c8)
// CHECK: %[[IDX:.*]] = memref.load %{{.*}} : memref<4xi64>
// CHECK: %[[Y:.*]] = vector.load {{.*}} : memref<4x16xf32>, vector<8xf32>
// CHECK: %[[CLAMPED:.*]] = arith.maxsi %[[IDX]], %{{.*}} : i64
// CHECK: %[[ROW:.*]] = arith.index_cast %[[CLAMPED]] : i64 to index
// CHECK: %[[V:.*]] = vector.load %{{.*}}[%[[ROW]], %[[J]]] : memref<10x16xf32>, vector<8xf32>
// CHECK: arith.mulf %[[V]], %[[Y]] : vector<8xf32>
// CHECK: vector.store
// CHECK-COUNT-2: linalg.generic
func.func @row_reads(%x: memref<10x16xf32>, %idx: memref<4xi64>, %y: memref<4x16xf32>, %out: memref<4x16xf32>,
                     %col: memref<16x16xf32>, %short: memref<10x12xf32>, %out12: memref<4x12xf32>) {
  %zero = arith.constant 0 : i64
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%idx, %y : memref<4xi64>, memref<4x16xf32>) outs(%out : memref<4x16xf32>) {
  ^bb0(%i: i64, %b: f32, %o: f32):
    %c = arith.maxsi %i, %zero : i64
    %r = arith.index_cast %c : i64 to index
    %j = linalg.index 1 : index
    %v = memref.load %x[%r, %j] : memref<10x16xf32>
    %p = arith.mulf %v, %b : f32
    linalg.yield %p : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%idx : memref<4xi64>) outs(%out : memref<4x16xf32>) {
  ^bb0(%i: i64, %o: f32):
    %r = arith.index_cast %i : i64 to index
    %j = linalg.index 1 : index
    %v = memref.load %col[%j, %r] : memref<16x16xf32>
    linalg.yield %v : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%idx : memref<4xi64>) outs(%out12 : memref<4x12xf32>) {
  ^bb0(%i: i64, %o: f32):
    %r = arith.index_cast %i : i64 to index
    %j = linalg.index 1 : index
    %v = memref.load %short[%r, %j] : memref<10x12xf32>
    linalg.yield %v : f32
  }
  return
}
