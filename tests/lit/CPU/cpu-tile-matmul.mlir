// RUN: kiln-opt %s --kiln-cpu-tile-matmul="vector-width=16" --split-input-file | FileCheck %s

// 13x200 @ 200x150 f32 on 2 threads, 6x64 micro-kernel (6 rows x 4
// vectors of 16): two column blocks (of 3 panels of 64: one, then two),
// one row group of 13 rows (3 panels of 6), for the 2 threads: a split by
// rows would pack all of B twice. Each task
// packs k = 0..200 (one slice: the 256 of k_block is larger) of A and B;
// tiles crossing C's edges (row 12, columns 128..150) go through a scratch
// tile. A is packed 16 k at a time: a vector of each of a panel's 6 rows
// (zeros past row 13), one shuffle interleaving them into the panel's 96
// floats; the last 8 k (200 = 12 x 16 + 8) element by element.
// CHECK-LABEL: func @mm
// CHECK-NOT: linalg.matmul
// CHECK: scf.parallel (%{{.*}}) = (%c0) to (%c2) step (%c1)
// CHECK-DAG: %[[AP:.*]] = memref.alloc() {alignment = 64 : i64} : memref<3x200x6xf32>
// CHECK-DAG: %[[BP:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2x200x64xf32>
// CHECK-DAG: memref.alloca() : memref<6x64xf32>
// CHECK: vector.store %{{.*}}, %[[BP]]
// CHECK: %[[AROWS:.*]] = memref.collapse_shape %[[AP]] {{\[\[}}0], [1, 2]] : memref<3x200x6xf32> into memref<3x1200xf32>
// CHECK: arith.divsi %{{.*}}, %c16
// CHECK-COUNT-6: vector.load %arg0
// CHECK: vector.shuffle
// CHECK: vector.store %{{.*}}, %[[AROWS]][%{{.*}}, %{{.*}}] : memref<3x1200xf32>, vector<96xf32>
// CHECK: memref.store %{{.*}}, %[[AP]]
// CHECK: memref.prefetch %{{.*}}, write, locality<3>, data
// CHECK: scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK: vector.load %[[BP]]
// CHECK: memref.load %[[AP]]
// CHECK: vector.broadcast
// CHECK: vector.fma
// CHECK: vector.load %{{.*}} : memref<13x150xf32>, vector<16xf32>
// CHECK: arith.addf %{{.*}} : vector<16xf32>
// CHECK: memref.dealloc %[[AP]]
// CHECK: } {kiln.min_task_size = 1 : index}
func.func @mm(%a: memref<13x200xf32>, %b: memref<200x150xf32>, %c: memref<13x150xf32>) {
  linalg.matmul ins(%a, %b : memref<13x200xf32>, memref<200x150xf32>) outs(%c : memref<13x150xf32>)
  return
}

// -----

// 1025 columns: two column blocks of about equal width (block b starts at
// panel b * 17 / 2: 8 panels, 512 columns, then 513), not 1024 and 1: the
// two tasks are equally long (a block of one column left one thread all
// the work).
// CHECK-LABEL: func @balanced_columns
// CHECK: scf.parallel (%[[T:.*]]) = (%c0) to (%c2) step (%c1)
// CHECK: %[[P:.*]] = arith.muli %[[T]], %c17
// CHECK: arith.divsi %[[P]], %c2
// CHECK: arith.minsi %{{.*}}, %c1025
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<9x8x64xf32>
func.func @balanced_columns(%a: memref<6x8xf32>, %b: memref<8x1025xf32>, %c: memref<6x1025xf32>) {
  linalg.matmul ins(%a, %b : memref<6x8xf32>, memref<8x1025xf32>) outs(%c : memref<6x1025xf32>)
  return
}

// -----

// An empty C (no rows) has no tasks.
// CHECK-LABEL: func @no_rows
// CHECK: scf.parallel (%{{.*}}) = (%c0) to (%c0) step (%c1)
func.func @no_rows(%a: memref<0x8xf32>, %b: memref<8x64xf32>, %c: memref<0x64xf32>) {
  linalg.matmul ins(%a, %b : memref<0x8xf32>, memref<8x64xf32>) outs(%c : memref<0x64xf32>)
  return
}

// -----

// Other element types keep the generic lowering.
// CHECK-LABEL: func @f64
// CHECK: linalg.matmul
func.func @f64(%a: memref<8x8xf64>, %b: memref<8x8xf64>, %c: memref<8x8xf64>) {
  linalg.matmul ins(%a, %b : memref<8x8xf64>, memref<8x8xf64>) outs(%c : memref<8x8xf64>)
  return
}

// -----

// A bias add right after the matmul runs on the accumulators: C is never
// stored, the sum goes straight to the output. C's zero fill is folded
// into the sums: C is neither filled nor read.
// CHECK-LABEL: func @bias
// CHECK-SAME: (%{{.*}}: memref<12x64xf32>, %{{.*}}: memref<64x64xf32>, %[[BIAS:.*]]: memref<64xf32>, %[[OUT:.*]]: memref<12x64xf32>)
// CHECK-NOT: linalg.fill
// CHECK-NOT: linalg.generic
// CHECK-NOT: %alloc[
// CHECK: vector.fma
// CHECK-NOT: %alloc[
// CHECK: vector.load %[[BIAS]]
// CHECK-NOT: %alloc[
// CHECK: arith.addf %{{.*}} : vector<16xf32>
// CHECK-NOT: %alloc[
// CHECK: vector.store %{{.*}}, %[[OUT]]
// CHECK-NOT: %alloc[
func.func @bias(%a: memref<12x64xf32>, %b: memref<64x64xf32>, %bias: memref<64xf32>, %out: memref<12x64xf32>) {
  %c = memref.alloc() : memref<12x64xf32>
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<12x64xf32>)
  linalg.matmul ins(%a, %b : memref<12x64xf32>, memref<64x64xf32>) outs(%c : memref<12x64xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%c, %bias : memref<12x64xf32>, memref<64xf32>) outs(%out : memref<12x64xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  memref.dealloc %c : memref<12x64xf32>
  return
}

// -----

// k = 300 runs as two slices (256, 44): the first adds the fill value (0)
// and stores its partial sums in C, the last adds C and applies the
// epilogue.
// CHECK-LABEL: func @bias_two_slices
// CHECK-SAME: %[[OUT:[^:]*]]: memref<12x64xf32>)
// CHECK: %[[C:.*]] = memref.alloc() : memref<12x64xf32>
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %{{.*}}, %c0
// CHECK: %[[LAST:.*]] = arith.cmpi eq, %{{.*}}, %c1
// CHECK: vector.fma
// CHECK: scf.if %[[FIRST]] -> (vector<16xf32>)
// CHECK-NEXT: scf.yield %cst{{.*}} : vector<16xf32>
// CHECK-NEXT: } else {
// CHECK: vector.load %[[C]][
// CHECK: scf.if %[[LAST]]
// CHECK: arith.addf %{{.*}} : vector<16xf32>
// CHECK: vector.store %{{.*}}, %[[OUT]]
// CHECK: } else {
// CHECK: vector.store %{{.*}}, %[[C]][
func.func @bias_two_slices(%a: memref<12x300xf32>, %b: memref<300x64xf32>, %bias: memref<64xf32>, %out: memref<12x64xf32>) {
  %c = memref.alloc() : memref<12x64xf32>
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<12x64xf32>)
  linalg.matmul ins(%a, %b : memref<12x300xf32>, memref<300x64xf32>) outs(%c : memref<12x64xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%c, %bias : memref<12x64xf32>, memref<64xf32>) outs(%out : memref<12x64xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  memref.dealloc %c : memref<12x64xf32>
  return
}

// -----

// An epilogue whose output is a temporary allocated after the matmul (a
// reshape of it is the result): the allocation moves above the fused
// kernel that stores into it.
// CHECK-LABEL: func @epilogue_into_temporary
// CHECK: %[[T:.*]] = memref.alloc() : memref<8x32xf32>
// CHECK-NOT: linalg.generic
// CHECK: vector.fma
// CHECK: math.tanh %{{.*}} : vector<16xf32>
// CHECK: vector.store %{{.*}}, %[[T]]
// CHECK: memref.collapse_shape %[[T]]
func.func @epilogue_into_temporary(%a: memref<8x16xf32>, %b: memref<16x32xf32>, %out: memref<256xf32>) {
  %c = memref.alloc() : memref<8x32xf32>
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<8x32xf32>)
  linalg.matmul ins(%a, %b : memref<8x16xf32>, memref<16x32xf32>) outs(%c : memref<8x32xf32>)
  %t = memref.alloc() : memref<8x32xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%c : memref<8x32xf32>) outs(%t : memref<8x32xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = math.tanh %x : f32
    linalg.yield %y : f32
  }
  %flat = memref.collapse_shape %t [[0, 1]] : memref<8x32xf32> into memref<256xf32>
  memref.copy %flat, %out : memref<256xf32> to memref<256xf32>
  memref.dealloc %c : memref<8x32xf32>
  memref.dealloc %t : memref<8x32xf32>
  return
}

// -----

// Run-time sizes: M, N and K are read from the buffers; the task count,
// the k slices (at least one, so that k = 0 still stores the fill) and
// every edge test are computed at run time, and the packed panels take the
// default block sizes (96 rows: 16 panels of 6; 1024 columns: 16 of 64).
// CHECK-LABEL: func @dynamic
// CHECK-SAME: (%[[A:[^:]*]]: memref<?x?xf32>, %{{.*}}: memref<?x?xf32>, %[[C:[^:]*]]: memref<?x?xf32>)
// CHECK-DAG: %[[M:.*]] = memref.dim %[[C]], %c0
// CHECK-DAG: %[[N:.*]] = memref.dim %[[C]], %c1
// CHECK-DAG: %[[K:.*]] = memref.dim %[[A]], %c1
// CHECK: %[[COLS:.*]] = arith.ceildivsi %[[N]], %c1024
// CHECK: arith.ceildivsi %[[M]], %c6
// CHECK: %[[TASKS:.*]] = arith.muli %{{.*}}, %[[COLS]] : index
// CHECK-NEXT: scf.parallel (%{{.*}}) = (%c0) to (%[[TASKS]]) step (%c1)
// CHECK-DAG: memref.alloc() {alignment = 64 : i64} : memref<16x256x6xf32>
// CHECK-DAG: memref.alloc() {alignment = 64 : i64} : memref<16x256x64xf32>
// CHECK-DAG: memref.alloca() : memref<6x64xf32>
// CHECK: arith.ceildivsi %[[K]], %c256
// CHECK: vector.fma
// CHECK: scf.if
// CHECK: } {kiln.min_task_size = 1 : index}
func.func @dynamic(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %c: memref<?x?xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<?x?xf32>)
  linalg.matmul ins(%a, %b : memref<?x?xf32>, memref<?x?xf32>) outs(%c : memref<?x?xf32>)
  return
}

// -----

// C is an output argument (the matmul is a result, and an elementwise op
// of it another): the elementwise op stays apart, or C would never be
// written (differential seed 90210, program 5137).
// CHECK-LABEL: func @result_and_consumer
// CHECK: vector.fma
// CHECK: vector.store %{{.*}}, %arg2
// CHECK: linalg.generic
// CHECK: arith.negf
func.func @result_and_consumer(%a: memref<8x16xf32>, %b: memref<16x32xf32>, %c: memref<8x32xf32>, %out: memref<8x32xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<8x32xf32>)
  linalg.matmul ins(%a, %b : memref<8x16xf32>, memref<16x32xf32>) outs(%c : memref<8x32xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%c : memref<8x32xf32>) outs(%out : memref<8x32xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.negf %x : f32
    linalg.yield %y : f32
  }
  return
}


// -----

// One row of A (a gemv): a generic with k outside n, the reduction over
// an outer loop that kiln-vectorize runs in blocks of B's columns; no
// packing, no micro-kernel. Batched too, A shared. A transposed B (read
// down its columns) is left alone.
// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[BA:.*]] = affine_map<(d0, d1, d2, d3) -> (d1, d2)>
// CHECK-DAG: #[[BB:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
// CHECK-DAG: #[[BC:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-LABEL: func @row_times_matrix
// CHECK: linalg.fill
// CHECK: linalg.generic {indexing_maps = [#[[A]], #[[B]], #[[C]]], iterator_types = ["parallel", "reduction", "parallel"]}
// CHECK-NEXT: ^bb0(%[[X:.*]]: f32, %[[Y:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT: %[[S:.*]] = math.fma %[[X]], %[[Y]], %[[ACC]]
// CHECK-NEXT: linalg.yield %[[S]]
// CHECK: linalg.generic {indexing_maps = [#[[BA]], #[[BB]], #[[BC]]], iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
// CHECK-NEXT: ^bb0
// CHECK: linalg.matmul indexing_maps
func.func @row_times_matrix(%a: memref<1x64xf32>, %b: memref<64x40xf32>, %c: memref<1x40xf32>,
                            %bb: memref<3x64x40xf32>, %cb: memref<3x1x40xf32>,
                            %bt: memref<40x64xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<1x40xf32>)
  linalg.matmul ins(%a, %b : memref<1x64xf32>, memref<64x40xf32>) outs(%c : memref<1x40xf32>)
  linalg.batch_matmul indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>]
      ins(%a, %bb : memref<1x64xf32>, memref<3x64x40xf32>) outs(%cb : memref<3x1x40xf32>)
  linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>]
      ins(%a, %bt : memref<1x64xf32>, memref<40x64xf32>) outs(%c : memref<1x40xf32>)
  return
}

// -----

// Up to 4 rows of A stream B the same way (kiln-vectorize then runs the
// rows inside each block of B's columns); 5 rows take the tiled kernel.
// CHECK-LABEL: func @rows_times_matrix
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]} ins(%{{.*}}, %{{.*}} : memref<4x64xf32>, memref<64x40xf32>) outs(%{{.*}} : memref<4x40xf32>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: math.fma
// CHECK-NOT: linalg.generic
// CHECK: scf.parallel
func.func @rows_times_matrix(%a: memref<4x64xf32>, %b: memref<64x40xf32>, %c: memref<4x40xf32>,
                             %a5: memref<5x64xf32>, %c5: memref<5x40xf32>) {
  linalg.matmul ins(%a, %b : memref<4x64xf32>, memref<64x40xf32>) outs(%c : memref<4x40xf32>)
  linalg.matmul ins(%a5, %b : memref<5x64xf32>, memref<64x40xf32>) outs(%c5 : memref<5x40xf32>)
  return
}

// -----

// 3 rows times 1024x1000 on 2 threads: 1000 columns are one 8 KiB block,
// so K is split into 2 slices of 512 rows (A and B reshaped, not copied),
// each summed into its own partial C, the partials then added to C. With
// 256 rows of B, a slice would take fewer than 256: no split. Two rows of
// A are not split either.
// CHECK-LABEL: func @rows_times_matrix_k_slices
// CHECK-DAG: %[[AS:.*]] = memref.expand_shape %arg0 {{\[\[}}0], [1, 2]] output_shape [3, 2, 512]
// CHECK-DAG: %[[BS:.*]] = memref.expand_shape %arg1 {{\[\[}}0, 1], [2]] output_shape [2, 512, 1000]
// CHECK: %[[P:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2x3x1000xf32>
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[P]] : memref<2x3x1000xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction", "parallel"]} ins(%[[AS]], %[[BS]] : {{.*}}) outs(%[[P]] : memref<2x3x1000xf32>)
// CHECK: math.fma
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel", "parallel"]} ins(%[[P]] : memref<2x3x1000xf32>) outs(%arg2 : memref<3x1000xf32>)
// CHECK: arith.addf
// CHECK: memref.dealloc %[[P]]
// CHECK: linalg.generic {{.*}} ins(%arg3, %arg4 : memref<3x256xf32>, memref<256x1000xf32>)
// CHECK: linalg.generic {{.*}} ins(%arg5, %arg1 : memref<2x1024xf32>, memref<1024x1000xf32>)
// CHECK-NOT: memref.expand_shape
// CHECK: return
func.func @rows_times_matrix_k_slices(%a: memref<3x1024xf32>, %b: memref<1024x1000xf32>,
                                      %c: memref<3x1000xf32>, %a2: memref<3x256xf32>,
                                      %b2: memref<256x1000xf32>, %a3: memref<2x1024xf32>,
                                      %c3: memref<2x1000xf32>) {
  linalg.matmul ins(%a, %b : memref<3x1024xf32>, memref<1024x1000xf32>) outs(%c : memref<3x1000xf32>)
  linalg.matmul ins(%a2, %b2 : memref<3x256xf32>, memref<256x1000xf32>) outs(%c : memref<3x1000xf32>)
  linalg.matmul ins(%a3, %b : memref<2x1024xf32>, memref<1024x1000xf32>) outs(%c3 : memref<2x1000xf32>)
  return
}

// -----

// conv2d's patches (im2col, K = (kh, kw, c) of a channels-last image of 16
// channels) are not written: each B panel is packed from the image, a run
// of 16 channels of each of 16 pixels transposed in registers (4 rounds of
// 16 shuffles) into 16 k rows of the panel. 30 pixels (columns) fill half a
// panel: the columns past them repeat the last (a clamp, no branch). A
// patch copy whose channels are not whole vectors (8) stays.
// CHECK-LABEL: func @conv_patches
// CHECK-NOT: memref.alloc() {{.*}} : memref<2x1x3x3x16x5x6xf32>
// CHECK-NOT: linalg.generic
// CHECK: %[[KCOUNT:.*]] = arith.minsi %{{.*}}, %c144 : index
// CHECK: scf.for %[[P:.*]] = %c0 to %[[KCOUNT]] step %c16
// CHECK: arith.minsi %{{.*}}, %c29
// CHECK: vector.load %arg0[{{.*}}] : memref<2x7x8x1x16xf32>, vector<16xf32>
// CHECK-COUNT-64: vector.shuffle
// CHECK: vector.store %{{.*}}, %{{.*}}[%{{.*}}, %[[P]], %c0] : memref<1x144x64xf32>, vector<16xf32>
// CHECK: vector.fma
// CHECK: linalg.generic
// CHECK-SAME: ins(%arg3 : memref<2x7x8x1x8xf32>)
// CHECK: scf.parallel
#patch = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d2 + d5, d3 + d6, d1, d4)>
#id7 = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3, d4, d5, d6)>
#wa = affine_map<(d0, d1, d2, d3) -> (d1, d3)>
#wb = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
#wc = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
func.func @conv_patches(%image: memref<2x7x8x1x16xf32>, %w: memref<8x144xf32>,
                        %c: memref<2x8x30xf32>, %image8: memref<2x7x8x1x8xf32>,
                        %w8: memref<8x72xf32>, %c8: memref<2x8x30xf32>) {
  %zero = arith.constant 0.0 : f32
  %patches = memref.alloc() {alignment = 64 : i64} : memref<2x1x3x3x16x5x6xf32>
  linalg.generic {indexing_maps = [#patch, #id7], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%image : memref<2x7x8x1x16xf32>) outs(%patches : memref<2x1x3x3x16x5x6xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  %b = memref.collapse_shape %patches [[0], [1, 2, 3, 4], [5, 6]] : memref<2x1x3x3x16x5x6xf32> into memref<2x144x30xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<2x8x30xf32>)
  linalg.batch_matmul indexing_maps = [#wa, #wb, #wc] ins(%w, %b : memref<8x144xf32>, memref<2x144x30xf32>) outs(%c : memref<2x8x30xf32>)
  memref.dealloc %patches : memref<2x1x3x3x16x5x6xf32>
  %patches8 = memref.alloc() {alignment = 64 : i64} : memref<2x1x3x3x8x5x6xf32>
  linalg.generic {indexing_maps = [#patch, #id7], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%image8 : memref<2x7x8x1x8xf32>) outs(%patches8 : memref<2x1x3x3x8x5x6xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  %b8 = memref.collapse_shape %patches8 [[0], [1, 2, 3, 4], [5, 6]] : memref<2x1x3x3x8x5x6xf32> into memref<2x72x30xf32>
  linalg.batch_matmul indexing_maps = [#wa, #wb, #wc] ins(%w8, %b8 : memref<8x72xf32>, memref<2x72x30xf32>) outs(%c8 : memref<2x8x30xf32>)
  memref.dealloc %patches8 : memref<2x1x3x3x8x5x6xf32>
  return
}

// -----

// 3 batches of 64x32 @ 32x1024 on 2 threads: one parallel loop over the
// batches' tasks (the batch is t / 2), each batch in two column blocks of
// 512 (8 panels) and one row group of 64 rows: splitting the rows too would
// pack every column of B twice to save nothing.
// CHECK-LABEL: func @few_rows_batched
// CHECK-NOT: scf.for
// CHECK: scf.parallel (%[[T:.*]]) = (%c0) to (%c6) step (%c1)
// CHECK: %[[BATCH:.*]] = arith.divsi %[[T]], %c2
// CHECK-DAG: memref.alloc() {alignment = 64 : i64} : memref<11x32x6xf32>
// CHECK-DAG: memref.alloc() {alignment = 64 : i64} : memref<8x32x64xf32>
// CHECK: vector.load %arg1[%[[BATCH]], %{{.*}}, %{{.*}}] : memref<3x32x1024xf32>
func.func @few_rows_batched(%a: memref<3x64x32xf32>, %b: memref<3x32x1024xf32>, %c: memref<3x64x1024xf32>) {
  linalg.batch_matmul ins(%a, %b : memref<3x64x32xf32>, memref<3x32x1024xf32>) outs(%c : memref<3x64x1024xf32>)
  return
}
