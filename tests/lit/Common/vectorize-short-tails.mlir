// RUN: kiln-opt %s --kiln-vectorize="vector-width=8 run-time-sizes=1 short-tails=1" --split-input-file | FileCheck %s
// RUN: kiln-opt %s --kiln-vectorize="vector-width=8 run-time-sizes=1" --split-input-file | FileCheck %s --check-prefix=SCALAR

// A static row of 19: two whole vectors and one of 3 in the same loop,
// which runs to the row's end. Without short-tails, the last 3 are a
// scalar generic.
// CHECK-LABEL: func @scale
// CHECK: scf.parallel (%{{.*}}, %[[J:.*]]) = ({{.*}}) to (%c4, %c19) step (%c1, %c8)
// CHECK: %[[WHOLE:.*]] = arith.cmpi ult, %[[J]], %c16
// CHECK: scf.if %[[WHOLE]]
// CHECK: vector.load %{{.*}} : memref<4x19xf32, strided<[20, 1]>>, vector<8xf32>
// CHECK: math.exp %{{.*}} : vector<8xf32>
// CHECK: vector.store %{{.*}} : memref<4x19xf32>, vector<8xf32>
// CHECK: } else {
// CHECK: %[[X:.*]] = vector.load %{{.*}} : memref<4x19xf32, strided<[20, 1]>>, vector<3xf32>
// CHECK: vector.broadcast %{{.*}} : f32 to vector<3xf32>
// CHECK: math.exp %{{.*}} : vector<3xf32>
// CHECK: vector.store %{{.*}} : memref<4x19xf32>, vector<3xf32>
// CHECK-NOT: linalg.generic
// SCALAR-LABEL: func @scale
// SCALAR: scf.parallel (%{{.*}}, %{{.*}}) = ({{.*}}) to (%c4, %c16) step (%c1, %c8)
// SCALAR-NOT: scf.if
// SCALAR: memref.subview %{{.*}}[0, 16] [4, 3] [1, 1]
// SCALAR: linalg.generic
func.func @scale(%x: memref<4x19xf32, strided<[20, 1]>>, %r: memref<4xf32>, %out: memref<4x19xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %r : memref<4x19xf32, strided<[20, 1]>>, memref<4xf32>) outs(%out : memref<4x19xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %0 = arith.mulf %a, %b : f32
    %1 = math.exp %0 : f32
    linalg.yield %1 : f32
  }
  return
}

// -----

// Whole vectors only: no branch. A run-time row keeps the scalar tail. A
// short vector claims no alignment (its index is a multiple of the wide
// vectors' lanes, not its own).
// CHECK-LABEL: func @whole_and_run_time
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = ({{.*}}) to (%c4, %c16) step (%c1, %c8)
// CHECK-NOT: scf.if
// CHECK: vector.store %{{.*}} {alignment = 16 : i64} : memref<4x16xi32>, vector<8xi32>
// CHECK: scf.parallel
// CHECK-NOT: scf.if
// CHECK: linalg.generic
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = ({{.*}}) to (%c4{{.*}}, %c20) step (%c1{{.*}}, %c8{{.*}})
// CHECK: vector.store %{{.*}} : memref<4x20xi8>, vector<8xi8>
// CHECK: } else {
// CHECK: vector.load %{{.*}} : memref<4x20xi8>, vector<4xi8>
// CHECK: vector.store %{{.*}} : memref<4x20xi8>, vector<4xi8>
func.func @whole_and_run_time(%x: memref<4x16xi32>, %out: memref<4x16xi32>, %y: memref<4x?xf32>, %out2: memref<4x?xf32>, %b: memref<4x20xi8>, %out3: memref<4x20xi8>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : memref<4x16xi32>) outs(%out : memref<4x16xi32>) {
  ^bb0(%a: i32, %o: i32):
    %0 = arith.addi %a, %a : i32
    linalg.yield %0 : i32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%y : memref<4x?xf32>) outs(%out2 : memref<4x?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %0 = arith.addf %a, %a : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%b : memref<4x20xi8>) outs(%out3 : memref<4x20xi8>) {
  ^bb0(%a: i8, %o: i8):
    linalg.yield %a : i8
  }
  return
}

// -----

// Row reads (an index_select) with a short tail: the tail's vector is read
// at the same row and the loop's index.
// CHECK-LABEL: func @row_reads
// CHECK: scf.if
// CHECK: vector.load %{{.*}}[%{{.*}}, %[[J:.*]]] : memref<10x12xf32>, vector<8xf32>
// CHECK: } else {
// CHECK: vector.load %{{.*}}[%{{.*}}, %[[J]]] : memref<10x12xf32>, vector<4xf32>
func.func @row_reads(%idx: memref<4xi64>, %x: memref<10x12xf32>, %out: memref<4x12xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%idx : memref<4xi64>) outs(%out : memref<4x12xf32>) {
  ^bb0(%i: i64, %o: f32):
    %r = arith.index_cast %i : i64 to index
    %j = linalg.index 1 : index
    %v = memref.load %x[%r, %j] : memref<10x12xf32>
    linalg.yield %v : f32
  }
  return
}
