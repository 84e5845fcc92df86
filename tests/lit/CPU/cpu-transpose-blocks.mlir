// RUN: kiln-opt %s --kiln-cpu-transpose-blocks=vector-width=4 --canonicalize --split-input-file | FileCheck %s

// An add of a transposed input and a row-broadcast scale, 35x40 (V = 4 f32
// lanes): blocks of two 4x4 squares along K (d0) over 32 rows, one along L
// (d1) over all 40 columns. A square loads 4 rows of %a along K, two rounds
// of 4 shuffles transpose them, and each output row takes one; the last 3
// rows of K run as the generic on subviews.
// CHECK-LABEL: func @add_transposed
// CHECK: scf.parallel (%[[K:.*]], %[[L:.*]]) = (%c0, %c0) to (%c32, %c40) step (%c8, %c4)
// CHECK: scf.for %[[SQ:.*]] = %c0 to %c8 step %c4
// CHECK: %[[K0:.*]] = arith.addi %[[K]], %[[SQ]]
// CHECK: vector.load %arg0[%[[L]], %[[K0]]] : memref<40x35xf32>, vector<4xf32>
// CHECK-COUNT-3: vector.load %arg0[
// CHECK: %[[LO:.*]] = vector.shuffle %{{.*}}, %{{.*}} [0, 4, 1, 5]
// CHECK-COUNT-7: vector.shuffle
// CHECK: vector.load %arg1[%[[K0]], %[[L]]] {alignment = 16 : i64} : memref<35x40xf32>, vector<4xf32>
// CHECK: memref.load %arg2[%[[K0]]]
// CHECK: arith.addf
// CHECK: arith.mulf
// CHECK: vector.store %{{.*}}, %arg3[%[[K0]], %[[L]]] {alignment = 16 : i64}
// CHECK-COUNT-3: vector.store
// CHECK: } {kiln.min_task_size = 32 : index}
// CHECK: memref.subview %arg0[0, 32] [40, 3]
// CHECK: linalg.generic
// CHECK-NOT: linalg.generic
#t = affine_map<(d0, d1) -> (d1, d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @add_transposed(%a: memref<40x35xf32>, %b: memref<35x40xf32>, %c: memref<35xf32>, %o: memref<35x40xf32>) {
  linalg.generic {indexing_maps = [#t, #id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b, %c : memref<40x35xf32>, memref<35x40xf32>, memref<35xf32>) outs(%o : memref<35x40xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32, %out: f32):
    %s = arith.addf %x, %y : f32
    %m = arith.mulf %s, %z : f32
    linalg.yield %m : f32
  }
  return
}

// -----

// A permute (0, 2, 1) of f64 (V = 2 lanes of a 16-byte register): K is d1,
// L d2; the batch loop stays a loop of the blocks. What they leave: the
// last column (every K), then the last 2 rows of K.
// CHECK-LABEL: func @permute_f64
// CHECK: scf.parallel (%[[B:.*]], %[[K:.*]], %[[L:.*]]) = (%c0, %c0, %c0) to (%c3, %c8, %c4) step (%c1, %c4, %c2)
// CHECK: vector.load %arg0[%[[B]], %[[L]], %{{.*}}] {alignment = 16 : i64} : memref<3x5x10xf64>, vector<2xf64>
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 2]
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [1, 3]
// CHECK: vector.store
// CHECK: memref.subview %arg0[0, 4, 0] [3, 1, 10]
// CHECK: linalg.generic
// CHECK: memref.subview %arg0[0, 0, 8] [3, 4, 2]
// CHECK: linalg.generic
#p = affine_map<(d0, d1, d2) -> (d0, d2, d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @permute_f64(%a: memref<3x5x10xf64>, %o: memref<3x10x5xf64>) {
  linalg.generic {indexing_maps = [#p, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%a : memref<3x5x10xf64>) outs(%o : memref<3x10x5xf64>) {
  ^bb0(%x: f64, %out: f64):
    linalg.yield %x : f64
  }
  return
}

// -----

// Run-time sizes: the blocks end at the sizes' multiples of 8 (K) and 4
// (L), computed at run time, and both rests run as generics.
// CHECK-LABEL: func @run_time
// CHECK-DAG: arith.remsi %{{.*}}, %c8
// CHECK-DAG: arith.remsi %{{.*}}, %c4
// CHECK: scf.parallel
// CHECK: vector.shuffle
// CHECK: linalg.generic
// CHECK: linalg.generic
#t2 = affine_map<(d0, d1) -> (d1, d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @run_time(%a: memref<?x?xf32>, %o: memref<?x?xf32>) {
  linalg.generic {indexing_maps = [#t2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<?x?xf32>) outs(%o : memref<?x?xf32>) {
  ^bb0(%x: f32, %out: f32):
    linalg.yield %x : f32
  }
  return
}

// -----

// Left alone: a copy without a transpose (kiln-vectorize's), dims shorter
// than a square, and bools (a byte each in memory, vectors of i1 pack
// bits).
// CHECK-LABEL: func @refused
// CHECK-NOT: vector.shuffle
// CHECK-COUNT-3: linalg.generic
#t4 = affine_map<(d0, d1) -> (d1, d0)>
#id4 = affine_map<(d0, d1) -> (d0, d1)>
func.func @refused(%a: memref<8x8xf32>, %o: memref<8x8xf32>, %s: memref<3x8xf32>, %so: memref<8x3xf32>,
                   %ba: memref<8x8xi1>, %bo: memref<8x8xi1>) {
  linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<8x8xf32>) outs(%o : memref<8x8xf32>) {
  ^bb0(%x: f32, %out: f32):
    linalg.yield %x : f32
  }
  linalg.generic {indexing_maps = [#t4, #id4], iterator_types = ["parallel", "parallel"]}
      ins(%s : memref<3x8xf32>) outs(%so : memref<8x3xf32>) {
  ^bb0(%x: f32, %out: f32):
    linalg.yield %x : f32
  }
  linalg.generic {indexing_maps = [#t4, #id4], iterator_types = ["parallel", "parallel"]}
      ins(%ba : memref<8x8xi1>) outs(%bo : memref<8x8xi1>) {
  ^bb0(%x: i1, %out: i1):
    linalg.yield %x : i1
  }
  return
}

// -----

// A batch of one: no loop dim for it (the canonicalizer would fold it and
// drop the task size with it), so the blocks keep their task size.
// CHECK-LABEL: func @batch_of_one
// CHECK: scf.parallel (%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) = (%c0, %c0) to (%c64, %c64) step (%c8, %c4)
// CHECK: } {kiln.min_task_size = 32 : index}
#in = affine_map<(d0, d1, d2) -> (d0, d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @batch_of_one(%a: memref<1x64x64xf32>, %b: memref<1x64x64xf32>) {
  linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%a : memref<1x64x64xf32>) outs(%b : memref<1x64x64xf32>) {
  ^bb0(%x: f32, %y: f32):
    linalg.yield %x : f32
  }
  return
}
