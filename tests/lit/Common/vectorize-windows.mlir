// RUN: kiln-opt %s --kiln-vectorize="vector-width=4 outer-reductions=1 short-tails=1 window-reads=1" --split-input-file | FileCheck %s
// RUN: kiln-opt %s --kiln-vectorize="vector-width=4 outer-reductions=1" --split-input-file | FileCheck %s --check-prefix=OFF

// A window of 3 taps along rows of 10 (kiln-cpu-interchange-windows' loop
// order: the taps outside the row), its output filled with 0 just before:
// a parallel loop over the rows' vectors, each started at a splat of the
// fill's value (the fill goes), carried through the taps reading the input
// at `j + k` (no alignment known) and the weight splatted; the last 2
// columns as one shorter vector in the same loop.
// CHECK: #[[SHIFT:.*]] = affine_map<(d0, d1, d2) -> (d1 + d2)>
// CHECK-LABEL: func @window
// CHECK-SAME: (%[[X:.*]]: memref<3x12xf32>, %[[W:.*]]: memref<3xf32>, %[[Y:.*]]: memref<3x10xf32>)
// CHECK-NOT: linalg.fill
// CHECK: scf.parallel (%[[I:.*]], %[[J:.*]]) = (%{{.*}}, %{{.*}}) to (%c3{{.*}}, %c10{{.*}}) step (%c1{{.*}}, %c4{{.*}})
// CHECK: %[[WHOLE:.*]] = arith.cmpi ult, %[[J]], %c8
// CHECK: scf.if %[[WHOLE]]
// CHECK: %[[ZERO:.*]] = vector.broadcast %{{.*}} : f32 to vector<4xf32>
// CHECK: %[[SUM:.*]] = scf.for %[[K:.*]] = %{{.*}} to %c3{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[ZERO]]) -> (vector<4xf32>)
// CHECK: %[[COL:.*]] = affine.apply #[[SHIFT]](%[[I]], %[[K]], %[[J]])
// CHECK: %[[XS:.*]] = vector.load %[[X]][%{{.*}}, %[[COL]]] : memref<3x12xf32>, vector<4xf32>
// CHECK: %[[WK:.*]] = memref.load %[[W]][%{{.*}}] : memref<3xf32>
// CHECK: vector.broadcast %[[WK]] : f32 to vector<4xf32>
// CHECK: vector.store %[[SUM]], %[[Y]][%{{.*}}, %{{.*}}] : memref<3x10xf32>, vector<4xf32>
// CHECK: } else {
// CHECK: vector.broadcast %{{.*}} : f32 to vector<2xf32>
// CHECK: vector.load %[[X]][%{{.*}}, %{{.*}}] : memref<3x12xf32>, vector<2xf32>
// CHECK: vector.store %{{.*}}, %[[Y]][%{{.*}}, %{{.*}}] : memref<3x10xf32>, vector<2xf32>
// CHECK-NOT: linalg.generic
// OFF-LABEL: func @window
// OFF: linalg.fill
// OFF-NOT: vector
#x = affine_map<(i, k, j) -> (i, j + k)>
#w = affine_map<(i, k, j) -> (k)>
#y = affine_map<(i, k, j) -> (i, j)>
func.func @window(%x: memref<3x12xf32>, %w: memref<3xf32>, %y: memref<3x10xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<3x10xf32>)
  linalg.generic {indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%x, %w : memref<3x12xf32>, memref<3xf32>) outs(%y : memref<3x10xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A store into the output between the fill and the window: the fill stays
// and the vectors start from the output's values.
// CHECK-LABEL: func @fill_then_store
// CHECK: linalg.fill
// CHECK: memref.store
// CHECK: scf.parallel
// CHECK: vector.load %arg2
#x = affine_map<(i, k, j) -> (i, j + k)>
#w = affine_map<(i, k, j) -> (k)>
#y = affine_map<(i, k, j) -> (i, j)>
func.func @fill_then_store(%x: memref<3x10xf32>, %w: memref<3xf32>, %y: memref<3x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  linalg.fill ins(%zero : f32) outs(%y : memref<3x8xf32>)
  memref.store %zero, %y[%c0, %c0] : memref<3x8xf32>
  linalg.generic {indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%x, %w : memref<3x10xf32>, memref<3xf32>) outs(%y : memref<3x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A window at stride 2 (a pool's `2 * j + k`), rows of 8: each vector of
// the output reads 8 elements from `2 * j + k`, the last masked off (it may
// lie past the buffer), and keeps every other one.
// CHECK-LABEL: func @stride_two
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = (%{{.*}}, %{{.*}}) to (%c2{{.*}}, %c8{{.*}}) step (%c1{{.*}}, %c4{{.*}})
// CHECK: %[[MASK:.*]] = vector.constant_mask [7] : vector<8xi1>
// CHECK: %[[WIDE:.*]] = vector.maskedload %arg0[%{{.*}}, %{{.*}}], %[[MASK]], %{{.*}} : memref<2x17xf32>, vector<8xi1>, vector<8xf32> into vector<8xf32>
// CHECK: %[[EVERY:.*]] = vector.shuffle %[[WIDE]], %[[WIDE]] [0, 2, 4, 6] : vector<8xf32>, vector<8xf32>
// CHECK: arith.maximumf %{{.*}}, %[[EVERY]] : vector<4xf32>
// OFF-LABEL: func @stride_two
// OFF-NOT: vector
#x = affine_map<(i, k, j) -> (i, 2 * j + k)>
#w = affine_map<(i, k, j) -> (k)>
#y = affine_map<(i, k, j) -> (i, j)>
func.func @stride_two(%x: memref<2x17xf32>, %w: memref<3xf32>, %y: memref<2x8xf32>) {
  linalg.generic {indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%x, %w : memref<2x17xf32>, memref<3xf32>) outs(%y : memref<2x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.maximumf %acc, %a : f32
    linalg.yield %m : f32
  }
  return
}
