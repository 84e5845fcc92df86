// RUN: kiln-opt %s --kiln-vectorize="vector-width=4 accumulators=2 outer-reductions=1" --split-input-file | FileCheck %s
// RUN: kiln-opt %s --kiln-vectorize="vector-width=4" --split-input-file | FileCheck %s --check-prefix=OFF
// RUN: kiln-opt %s --kiln-vectorize="vector-width=4 accumulators=2 outer-reductions=1 threads=2" --split-input-file | FileCheck %s --check-prefix=BLOCKS
// RUN: kiln-opt %s --kiln-vectorize="vector-width=4 accumulators=2 outer-reductions=1 threads=16" --split-input-file | FileCheck %s --check-prefix=THREADS16

// A sum over dim 0 of 5x22: a parallel loop over the columns, 8 lanes (two
// vectors) a step up to 16, each vector carried down the 5 rows from the
// output's values; columns 16-19 by one vector, 20-21 by scalars.
// CHECK-LABEL: func @sum_dim0
// CHECK: scf.parallel (%[[J:.*]]) = (%{{.*}}) to (%c16) step (%c8)
// CHECK: %[[INIT:.*]] = vector.load %arg1[%{{.*}}] {{.*}}: memref<22xf32>, vector<8xf32>
// CHECK: %[[SUM:.*]] = scf.for %[[I:.*]] = %{{.*}} to %c5 step %{{.*}} iter_args(%[[ACC:.*]] = %[[INIT]]) -> (vector<8xf32>)
// CHECK: %[[ROW:.*]] = vector.load %arg0[%{{.*}}, %{{.*}}] : memref<5x22xf32>, vector<8xf32>
// CHECK: arith.addf %[[ROW]], %[[ACC]] : vector<8xf32>
// CHECK: vector.store %[[SUM]], %arg1[%{{.*}}] {{.*}}: memref<22xf32>, vector<8xf32>
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%c4{{.*}}) step (%c4
// CHECK: vector.load %{{.*}} : memref<5x6xf32, strided<[22, 1], offset: 16>>, vector<4xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]} ins(%{{.*}} : memref<5x2xf32, strided<[22, 1], offset: 20>>)
// OFF-LABEL: func @sum_dim0
// OFF-NOT: vector
// Five rows are too few for blocks of columns.
// BLOCKS-LABEL: func @sum_dim0
// BLOCKS: iter_args
#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d1)>
func.func @sum_dim0(%x: memref<5x22xf32>, %y: memref<22xf32>) {
  linalg.generic {indexing_maps = [#in, #out], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<5x22xf32>) outs(%y : memref<22xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A max over the middle dim with a per-row scale (broadcast along the
// innermost loop): any body, the outer parallel loop kept.
// CHECK-LABEL: func @max_dim1
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = (%{{.*}}, %{{.*}}) to (%c3, %c8) step (%{{.*}}, %c8{{.*}})
// CHECK: scf.for {{.*}} -> (vector<8xf32>)
// CHECK: vector.broadcast %{{.*}} : f32 to vector<8xf32>
// CHECK: arith.maximumf {{.*}} : vector<8xf32>
// CHECK-NOT: linalg.generic
// CHECK: return
#in3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#scale = affine_map<(d0, d1, d2) -> (d1)>
#out3 = affine_map<(d0, d1, d2) -> (d0, d2)>
func.func @max_dim1(%x: memref<3x5x8xf32>, %s: memref<5xf32>, %y: memref<3x8xf32>) {
  linalg.generic {indexing_maps = [#in3, #scale, #out3],
                  iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%x, %s : memref<3x5x8xf32>, memref<5xf32>) outs(%y : memref<3x8xf32>) {
  ^bb0(%a: f32, %k: f32, %acc: f32):
    %p = arith.mulf %a, %k : f32
    %m = arith.maximumf %p, %acc : f32
    linalg.yield %m : f32
  }
  return
}

// -----

// An output not indexed by the parallel loops in order (transposed) keeps
// the scalar lowering.
// CHECK-LABEL: func @transposed_output
// CHECK-NOT: vector
// CHECK: linalg.generic
#in3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#outT = affine_map<(d0, d1, d2) -> (d2, d0)>
func.func @transposed_output(%x: memref<4x5x8xf32>, %y: memref<8x4xf32>) {
  linalg.generic {indexing_maps = [#in3, #outT],
                  iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%x : memref<4x5x8xf32>) outs(%y : memref<8x4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// With threads, a sum over dim 0 of 64 rows of 5004 runs in blocks of
// columns: at most 8 KiB of a row (2048 f32), so 3 blocks, made 4 for the
// two threads, of 157 vectors of 8 (1256 columns) each, the last taking
// the 1232 left of the 5000. Each block is a task (kiln.min_task_size 1)
// that takes every row in order into its block of the output, 8 lanes a
// step, through memory, 4 rows a step (each output vector loaded and
// stored once for the 4). The last 4 columns are carried in registers.
// BLOCKS-LABEL: func @sum_dim0_many_rows
// BLOCKS: scf.parallel (%[[J:.*]]) = (%{{.*}}) to (%c5000{{.*}}) step (%c1256{{.*}})
// BLOCKS: %[[LEFT:.*]] = arith.subi %c5000{{.*}}, %[[J]]
// BLOCKS: %[[COLUMNS:.*]] = arith.minsi %[[LEFT]], %c1256
// BLOCKS: scf.for %[[I:.*]] = %{{.*}} to %c64{{.*}} step %c4
// BLOCKS: scf.for %[[C:.*]] = %{{.*}} to %[[COLUMNS]] step %c8
// BLOCKS-NEXT: %[[COL:.*]] = arith.addi %[[J]], %[[C]]
// BLOCKS: %[[ACC:.*]] = vector.load %arg1[%{{.*}}] {{.*}}: memref<5004xf32>, vector<8xf32>
// BLOCKS: %[[ROW:.*]] = vector.load %arg0[%{{.*}}, %{{.*}}] {{.*}}: memref<64x5004xf32>, vector<8xf32>
// BLOCKS: %[[SUM0:.*]] = arith.addf %[[ROW]], %[[ACC]] : vector<8xf32>
// BLOCKS: %[[I1:.*]] = arith.addi %[[I]], %c1
// BLOCKS: %[[R1:.*]] = affine.apply #{{.*}}(%[[I1]], %[[COL]])
// BLOCKS: %[[ROW1:.*]] = vector.load %arg0[%[[R1]], %{{.*}}] {{.*}}: memref<64x5004xf32>, vector<8xf32>
// BLOCKS: %[[SUM1:.*]] = arith.addf %[[ROW1]], %[[SUM0]] : vector<8xf32>
// BLOCKS: arith.addi %[[I]], %c2
// BLOCKS: arith.addi %[[I]], %c3
// BLOCKS: %[[SUM:.*]] = arith.addf %{{.*}}, %{{.*}} : vector<8xf32>
// BLOCKS-NEXT: vector.store %[[SUM]], %arg1[%{{.*}}] {{.*}}: memref<5004xf32>, vector<8xf32>
// BLOCKS: } {kiln.min_task_size = 1 : index}
// BLOCKS: scf.parallel (%{{.*}}) = (%{{.*}}) to (%c4{{.*}}) step (%c4
// BLOCKS: iter_args
// CHECK-LABEL: func @sum_dim0_many_rows
// CHECK-NOT: kiln.min_task_size
#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d1)>
func.func @sum_dim0_many_rows(%x: memref<64x5004xf32>, %y: memref<5004xf32>) {
  linalg.generic {indexing_maps = [#in, #out], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<64x5004xf32>) outs(%y : memref<5004xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Four rows of A times B (kiln-cpu-tile-matmul's loop order m, k, n): B's
// rows do not depend on m, so with column blocks the m loop runs inside
// each column step, unrolled: a block vector of each of the 4 output rows
// in registers, and each of the 4 rows of B a step read for all of them
// (the same vector.load 4 times with no store between, which LLVM loads
// once). 8 KiB of a row is 2048 f32, so 1024 columns make 2 blocks for the
// 2 threads.
// BLOCKS-LABEL: func @rows_times_matrix
// BLOCKS: scf.parallel (%[[J:.*]]) = (%{{.*}}) to (%c1024{{.*}}) step (%c512{{.*}})
// BLOCKS: %[[COLUMNS:.*]] = arith.minsi
// BLOCKS-NOT: scf.for
// BLOCKS: scf.for %[[K:.*]] = %{{.*}} to %c64{{.*}} step %c4
// BLOCKS-NOT: scf.for
// BLOCKS: scf.for %[[C:.*]] = %{{.*}} to %[[COLUMNS]] step %c8
// BLOCKS-COUNT-4: vector.load %arg2[%{{.*}}, %{{.*}}] {{.*}}: memref<4x1024xf32>, vector<8xf32>
// BLOCKS: memref.load %arg0[%{{.*}}, %{{.*}}] : memref<4x64xf32>
// BLOCKS: vector.load %arg1[%{{.*}}, %{{.*}}] {{.*}}: memref<64x1024xf32>, vector<8xf32>
// BLOCKS-COUNT-4: vector.store %{{.*}}, %arg2[%{{.*}}, %{{.*}}] {{.*}}: memref<4x1024xf32>, vector<8xf32>
// BLOCKS: } {kiln.min_task_size = 1 : index}
#a = affine_map<(m, k, n) -> (m, k)>
#b = affine_map<(m, k, n) -> (k, n)>
#c = affine_map<(m, k, n) -> (m, n)>
func.func @rows_times_matrix(%a: memref<4x64xf32>, %b: memref<64x1024xf32>, %c: memref<4x1024xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : memref<4x64xf32>, memref<64x1024xf32>) outs(%c : memref<4x1024xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// kiln-cpu-tile-matmul's slices of K (8 slices of 64 rows of B, 4 rows of
// A) on 16 threads: 4096 columns are two 8 KiB blocks, and 8 slices times
// 2 blocks are 16 tasks, one for each thread. (Blocks were made a multiple
// of the threads whatever the slices: 16 blocks of 256 columns, 1 KiB of
// each row of B a task, a new page every 1 KiB.)
// THREADS16-LABEL: func @k_slices
// THREADS16: scf.parallel (%{{.*}}, %{{.*}}) = (%c0{{.*}}, %c0{{.*}}) to (%c8{{.*}}, %c4096{{.*}}) step (%c1{{.*}}, %c2048{{.*}})
// THREADS16: scf.for %{{.*}} = %{{.*}} to %c64{{.*}} step %c4
// THREADS16-COUNT-4: vector.load %arg2[%{{.*}}, %{{.*}}, %{{.*}}] {{.*}}: memref<8x4x4096xf32>, vector<8xf32>
// THREADS16: } {kiln.min_task_size = 1 : index}
#as = affine_map<(s, m, k, n) -> (m, s, k)>
#bs = affine_map<(s, m, k, n) -> (s, k, n)>
#ps = affine_map<(s, m, k, n) -> (s, m, n)>
func.func @k_slices(%a: memref<4x8x64xf32>, %b: memref<8x64x4096xf32>, %p: memref<8x4x4096xf32>) {
  linalg.generic {indexing_maps = [#as, #bs, #ps],
                  iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
      ins(%a, %b : memref<4x8x64xf32>, memref<8x64x4096xf32>) outs(%p : memref<8x4x4096xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %s = math.fma %x, %y, %acc : f32
    linalg.yield %s : f32
  }
  return
}
