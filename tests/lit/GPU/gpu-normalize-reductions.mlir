// RUN: kiln-opt %s --kiln-gpu-normalize-reductions --split-input-file | FileCheck %s

// A full reduction of a matrix: one loop over the collapsed buffer (the
// generic mapping ran it on one thread; lavapipe cut it at 65535
// iterations).
// CHECK-LABEL: func @full
// CHECK: %[[FLAT:.*]] = memref.collapse_shape %{{.*}} {{\[}}[0, 1]] : memref<300x300xf32> into memref<90000xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[FLAT]] : memref<90000xf32>)
// CHECK: math.erf
func.func @full(%x: memref<300x300xf32>, %out: memref<f32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]} ins(%x : memref<300x300xf32>) outs(%out : memref<f32>) {
  ^bb0(%in: f32, %o: f32):
    %e = math.erf %in : f32
    %s = arith.addf %e, %o : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A mean over H and W of NCHW: rows of H*W, the output untouched.
// CHECK-LABEL: func @spatial
// CHECK: memref.collapse_shape %{{.*}} {{\[}}[0], [1], [2, 3]] : memref<2x3x5x7xf32> into memref<2x3x35xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%{{.*}} : memref<2x3x35xf32>) outs(%{{.*}} : memref<2x3xf32>)
func.func @spatial(%x: memref<2x3x5x7xf32>, %out: memref<2x3xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%x : memref<2x3x5x7xf32>) outs(%out : memref<2x3xf32>) {
  ^bb0(%in: f32, %o: f32):
    %s = arith.addf %in, %o fastmath<reassoc> : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Reduced dims that are not adjacent (the parallel loop moves outside
// them), and adjacent ones of a view whose rows are not contiguous (a
// column slice): the innermost reduced loop first, into a temporary
// filled with the identity, then the temporary over the other.
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2) -> (d1, d0, d2)>
// CHECK-DAG: #[[ROWS:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[ID2:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func @kept
// CHECK-NOT: memref.collapse_shape
// CHECK: %[[P:.*]] = memref.alloc() : memref<5x4xf32>
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[P]] : memref<5x4xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[ROWS]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%{{.*}} : memref<4x5x6xf32>) outs(%[[P]] : memref<5x4xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[ID2]], #[[OUT]]], iterator_types = ["parallel", "reduction"]} ins(%[[P]] : memref<5x4xf32>) outs(%{{.*}} : memref<5xf32>)
// CHECK-NOT: memref.collapse_shape
// CHECK: %[[Q:.*]] = memref.alloc() : memref<8xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : memref<8x4xf32, strided<[8, 1]>>) outs(%[[Q]] : memref<8xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[Q]] : memref<8xf32>) outs(%{{.*}} : memref<f32>)
func.func @kept(%x: memref<4x5x6xf32>, %o1: memref<5xf32>, %y: memref<8x8xf32>, %o2: memref<f32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d1)>], iterator_types = ["reduction", "parallel", "reduction"]} ins(%x : memref<4x5x6xf32>) outs(%o1 : memref<5xf32>) {
  ^bb0(%in: f32, %o: f32):
    %s = arith.addf %in, %o fastmath<reassoc> : f32
    linalg.yield %s : f32
  }
  %v = memref.subview %y[0, 0] [8, 4] [1, 1] : memref<8x8xf32> to memref<8x4xf32, strided<[8, 1]>>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]} ins(%v : memref<8x4xf32, strided<[8, 1]>>) outs(%o2 : memref<f32>) {
  ^bb0(%in: f32, %o: f32):
    %s = arith.addf %in, %o fastmath<reassoc> : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Nor a pooling window's loops, which index the input through sums (its
// loops in order already).
// CHECK-LABEL: func @window
// CHECK-NOT: memref.collapse_shape
func.func @window(%x: memref<1x2x10x24xf32>, %w: memref<3x5xf32>, %out: memref<1x2x3x4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 3 + d4, d3 * 5 + d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%x, %w : memref<1x2x10x24xf32>, memref<3x5xf32>) outs(%out : memref<1x2x3x4xf32>) {
  ^bb0(%in: f32, %k: f32, %o: f32):
    %m = arith.maximumf %in, %o : f32
    linalg.yield %m : f32
  }
  return
}

// -----

// A window longer than a thread may loop (kMaxSerialWindow) is split
// like a reduction over several dims: its inner tap into a
// temporary first (lavapipe stops a thread's loops after 65535 iterations).
// CHECK-DAG: #[[LONGX:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 20 + d4, d3 * 20 + d5)>
// CHECK-DAG: #[[TAPS:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4)>
// CHECK-LABEL: func @long_window
// CHECK-NOT: memref.collapse_shape
// CHECK: %[[P:.*]] = memref.alloc() : memref<1x2x3x3x200xf32>
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[P]] : memref<1x2x3x3x200xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[LONGX]], #{{.*}}, #[[TAPS]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%{{.*}}, %{{.*}} : memref<1x2x240x240xf32>, memref<200x200xf32>) outs(%[[P]] : memref<1x2x3x3x200xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%[[P]] : memref<1x2x3x3x200xf32>) outs(%{{.*}} : memref<1x2x3x3xf32>)
func.func @long_window(%x: memref<1x2x240x240xf32>, %w: memref<200x200xf32>, %out: memref<1x2x3x3xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 20 + d4, d3 * 20 + d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%x, %w : memref<1x2x240x240xf32>, memref<200x200xf32>) outs(%out : memref<1x2x3x3xf32>) {
  ^bb0(%in: f32, %k: f32, %o: f32):
    %s = arith.addf %o, %in fastmath<reassoc> : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A direct conv of 512 channels to one (4608 taps) stays a thread per
// output: split, its taps took 1.5M blocks and 35 s on lavapipe.
// CHECK-LABEL: func @many_channel_window
// CHECK-NOT: memref.alloc
// CHECK: linalg.generic
// CHECK-NOT: linalg.generic
func.func @many_channel_window(%x: memref<1x512x34x34xf32>, %w: memref<512x3x3xf32>, %out: memref<1x32x32xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d3, d1 + d4, d2 + d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d3, d4, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : memref<1x512x34x34xf32>, memref<512x3x3xf32>) outs(%out : memref<1x32x32xf32>) {
  ^bb0(%in: f32, %k: f32, %o: f32):
    %p = arith.mulf %in, %k : f32
    %s = arith.addf %o, %p fastmath<reassoc> : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A column sum of too few columns for a thread each (a block per column
// read it strided): a thread per column and chunk of 63 rows (16 chunks),
// coalesced across the columns, the chunk the outer parallel dim; the
// partials [16, 8] then a thread per column over its 16, starting from the
// output's fill (no launch of its own).
// CHECK-LABEL: func @columns
// CHECK-NOT: linalg.fill
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NOT: linalg.fill
// CHECK: %[[P:.*]] = memref.alloc() : memref<16x8xf32>
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: scf.parallel (%[[C:.*]], %[[J:.*]]) = {{.*}} to (%c16, %c8{{.*}})
// CHECK: %[[LO:.*]] = arith.muli %[[C]], %c63
// CHECK: %[[END:.*]] = arith.addi %[[LO]], %c63
// CHECK: %[[HI:.*]] = arith.minsi %c1000{{.*}}, %[[END]]
// CHECK: scf.for %{{.*}} = %[[LO]] to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %[[ZERO]])
// CHECK: memref.store %{{.*}}, %[[P]][%[[C]], %[[J]]] : memref<16x8xf32>
// CHECK: scf.parallel (%{{.*}}) = {{.*}} to (%c8{{.*}})
// CHECK: scf.for %{{.*}} = %{{.*}} to %c16{{.*}} step %c4 iter_args(%{{.*}} = %[[ONE]])
// CHECK: memref.load %[[P]]
// CHECK-NOT: linalg.generic
// CHECK-NOT: linalg.fill
func.func @columns(%x: memref<1000x8xf32>, %out: memref<8xf32>) {
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%one : f32) outs(%out : memref<8xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]} ins(%x : memref<1000x8xf32>) outs(%out : memref<8xf32>) {
  ^bb0(%in: f32, %o: f32):
    %s = arith.addf %in, %o fastmath<reassoc> : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Inputs contiguous along an output dim with many outputs (a channel
// sum), or a short reduction: a thread per output, its loop over the
// reduced dim inside (the generic mapping ran one thread over all), the
// output loaded once, carried in a register, stored once.
// CHECK-LABEL: func @many_outputs
// CHECK: scf.parallel (%[[I:.*]], %[[J:.*]]) = {{.*}} to (%c100, %c1000)
// CHECK: %[[INIT:.*]] = memref.load %{{.*}} : memref<100x1000xf32>
// CHECK: %[[SUM:.*]] = scf.for %{{.*}} = %{{.*}} to %c2 step %{{.*}} iter_args(%[[ACC:.*]] = %[[INIT]]) -> (f32)
// CHECK: %[[X:.*]] = memref.load %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] : memref<100x2x1000xf32>
// CHECK: arith.addf %[[X]], %[[ACC]]
// CHECK: memref.store %[[SUM]], %{{.*}} : memref<100x1000xf32>
// CHECK-NOT: linalg.generic
func.func @many_outputs(%x: memref<100x2x1000xf32>, %out: memref<100x1000xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]} ins(%x : memref<100x2x1000xf32>) outs(%out : memref<100x1000xf32>) {
  ^bb0(%in: f32, %o: f32):
    %s = arith.addf %in, %o fastmath<reassoc> : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// An output filled right before (a reduce_sum's zeros): the thread per
// output starts from the fill's value, and the fill, a launch of its own,
// goes.
// CHECK-LABEL: func @filled
// CHECK-NOT: linalg.fill
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NOT: linalg.fill
// CHECK: scf.parallel
// CHECK-NOT: memref.load %{{.*}} : memref<100x1000xf32>
// CHECK: scf.for %{{.*}} = %{{.*}} to %c2 step %{{.*}} iter_args(%{{.*}} = %[[ZERO]]) -> (f32)
func.func @filled(%x: memref<100x2x1000xf32>, %out: memref<100x1000xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%out : memref<100x1000xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]} ins(%x : memref<100x2x1000xf32>) outs(%out : memref<100x1000xf32>) {
  ^bb0(%in: f32, %o: f32):
    %s = arith.addf %in, %o fastmath<reassoc> : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A longer reduction per thread: its loop unrolled by 4, so that four
// loads are in flight (one at a time, the sum over dim 1 of 64x128x4096
// ran at 2.7x its floor on the H200).
// CHECK-LABEL: func @unrolled
// CHECK: scf.parallel
// CHECK: scf.for %{{.*}} = %{{.*}} to %c8 step %c4 iter_args
// CHECK-COUNT-4: memref.load %{{.*}} : memref<1x8x20000xf32>
// CHECK: scf.yield
func.func @unrolled(%x: memref<1x8x20000xf32>, %out: memref<1x20000xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]} ins(%x : memref<1x8x20000xf32>) outs(%out : memref<1x20000xf32>) {
  ^bb0(%in: f32, %o: f32):
    %m = arith.maximumf %in, %o : f32
    linalg.yield %m : f32
  }
  return
}

// -----

// An argmax over a middle dim (two outputs, linalg.index in the body): the
// index is the reduced loop's; 6 iterations: one unrolled step of 4 (its
// loop of one trip folded away), then a loop over the other 2.
// CHECK-LABEL: func @argmax_middle
// CHECK: scf.parallel
// CHECK-COUNT-2: memref.load %{{.*}} : memref<1x20000x{{.*}}>
// CHECK-NOT: linalg.index
// CHECK-COUNT-4: arith.index_cast
// CHECK: %[[T:.*]]:2 = scf.for %{{.*}} = %c4 to %c6 step %{{.*}} iter_args
// CHECK: memref.store %[[T]]#0
// CHECK: memref.store %[[T]]#1
func.func @argmax_middle(%x: memref<1x6x20000xf32>, %v: memref<1x20000xf32>, %i: memref<1x20000xi64>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]} ins(%x : memref<1x6x20000xf32>) outs(%v, %i : memref<1x20000xf32>, memref<1x20000xi64>) {
  ^bb0(%in: f32, %best: f32, %at: i64):
    %k = linalg.index 1 : index
    %k64 = arith.index_cast %k : index to i64
    %gt = arith.cmpf ogt, %in, %best : f32
    %nb = arith.select %gt, %in, %best : f32
    %ni = arith.select %gt, %k64, %at : i64
    linalg.yield %nb, %ni : f32, i64
  }
  return
}

// -----

// Few outputs of long strided reductions (a column sum of 1000 rows by 8)
// stay rows of the row passes: a block per output.
// CHECK-LABEL: func @run_time_columns
// CHECK: iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : memref<?x8xf32>)
func.func @run_time_columns(%x: memref<?x8xf32>, %out: memref<8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]} ins(%x : memref<?x8xf32>) outs(%out : memref<8xf32>) {
  ^bb0(%in: f32, %o: f32):
    %s = arith.addf %in, %o fastmath<reassoc> : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A `?` row of f64, which no block all-reduces (shuffles move 32-bit
// words), runs a thread per chunk of 4096 into partials of a run-time
// count, then the partials are summed: one thread over the whole row
// before. f32 rows stay the row passes'.
// CHECK-LABEL: func @run_time_f64_row
// CHECK: %[[N:.*]] = memref.dim %arg0
// CHECK: %[[CHUNKS:.*]] = arith.ceildivsi %[[N]], %c4096
// CHECK: %[[PARTS:.*]] = memref.alloc(%[[CHUNKS]]) : memref<?xf64>
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%[[CHUNKS]])
// CHECK: memref.store %{{.*}}, %[[PARTS]]
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[PARTS]] : memref<?xf64>)
// CHECK: iterator_types = ["reduction"]} ins(%arg2 : memref<?xf32>)
func.func @run_time_f64_row(%x: memref<?xf64>, %out: memref<f64>, %y: memref<?xf32>, %o32: memref<f32>) {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]} ins(%x : memref<?xf64>) outs(%out : memref<f64>) {
  ^bb0(%in: f64, %o: f64):
    %s = arith.addf %in, %o fastmath<reassoc> : f64
    linalg.yield %s : f64
  }
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]} ins(%y : memref<?xf32>) outs(%o32 : memref<f32>) {
  ^bb0(%in: f32, %o: f32):
    %s = arith.addf %in, %o fastmath<reassoc> : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A row's statistic read along its row (softmax's max, 20000 rows of 16)
// does not make the reduction one read across outputs: the row passes
// keep it (a thread per row would also leave the row kernel).
// CHECK-LABEL: func @row_statistic
// CHECK-NOT: scf.parallel
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
func.func @row_statistic(%x: memref<20000x16xf32>, %m: memref<20000xf32>, %out: memref<20000xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x, %m : memref<20000x16xf32>, memref<20000xf32>) outs(%out : memref<20000xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %e = math.exp %d : f32
    %s = arith.addf %e, %o fastmath<reassoc> : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A variance's reduction reads the kept mean through zeros (1x3x1x1): no
// collapse, but the split still takes it (batch-norm statistics), one
// reduced loop at a time.
// CHECK-LABEL: func @broadcast_mean
// CHECK: %[[P:.*]] = memref.alloc() : memref<3x4x64xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%{{.*}}, %{{.*}} : memref<4x3x64x300xf32>, memref<1x3x1x1xf32>) outs(%[[P]] : memref<3x4x64xf32>)
// CHECK: %[[Q:.*]] = memref.alloc() : memref<3x4xf32>
// CHECK: iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[P]] : memref<3x4x64xf32>) outs(%[[Q]] : memref<3x4xf32>)
// CHECK: iterator_types = ["parallel", "reduction"]} ins(%[[Q]] : memref<3x4xf32>) outs(%{{.*}} : memref<1x3x1x1xf32>)
func.func @broadcast_mean(%x: memref<4x3x64x300xf32>, %m: memref<1x3x1x1xf32>, %out: memref<1x3x1x1xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (0, d1, 0, 0)>, affine_map<(d0, d1, d2, d3) -> (0, d1, 0, 0)>], iterator_types = ["reduction", "parallel", "reduction", "reduction"]} ins(%x, %m : memref<4x3x64x300xf32>, memref<1x3x1x1xf32>) outs(%out : memref<1x3x1x1xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %q = arith.mulf %d, %d : f32
    %s = arith.addf %q, %o fastmath<reassoc> : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Matmuls the tiling passes left (Vulkan's f32 ones) are reductions over
// K with a reassociable sum. A long K of few outputs (a thread summed all
// 70000 of it, past lavapipe's 65535 iterations) runs in chunks of 64, a
// thread per chunk and output, then the 1094 partials in chunks of 61,
// then the 18 left; many outputs of a short K, a thread per output; a
// run-time K of few outputs is a row for the row passes; a run-time K of
// run-time (or many) outputs, a thread per output and chunk of at most
// 16384 of K (their count ceil(K / 16384) at run time), then a thread per
// output over the partials (the generic mapping's thread per output ran
// all of K).
// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func @matmuls
// CHECK: memref.alloc() : memref<1094x2x3xf32>
// CHECK: scf.parallel ({{.*}}) = {{.*}} to (%c1094, %c2{{.*}}, %c3{{.*}})
// CHECK: arith.mulf
// CHECK: arith.addf %{{.*}}, %{{.*}} fastmath<reassoc> : f32
// CHECK: memref.alloc() : memref<18x2x3xf32>
// CHECK: scf.parallel ({{.*}}) = {{.*}} to (%c18, %c2{{.*}}, %c3{{.*}})
// CHECK: scf.parallel ({{.*}}) = {{.*}} to (%c2{{.*}}, %c3{{.*}})
// CHECK-NOT: linalg.matmul
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = {{.*}} to (%c128, %c256)
// CHECK: scf.for %{{.*}} = %{{.*}} to %c64 step %c4 iter_args
// CHECK: linalg.generic {indexing_maps = [#[[A]], #[[B]], #[[C]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%{{.*}}, %{{.*}} : memref<2x?xf32>, memref<?x3xf32>)
// CHECK: %[[N:.*]] = arith.ceildivsi %{{.*}}, %c16384 : index
// CHECK: %[[P:.*]] = memref.alloc(%[[N]], %[[M:.*]], %[[L:.*]]) : memref<?x?x?xf32>
// CHECK: scf.parallel (%[[CHUNK:.*]], %{{.*}}, %{{.*}}) = {{.*}} to (%[[N]], %{{.*}}, %{{.*}})
// CHECK: %[[FROM:.*]] = arith.muli %[[CHUNK]], %c16384
// CHECK: arith.minsi %{{.*}}, %{{.*}} : index
// CHECK: scf.for %{{.*}} = %[[FROM]] to
// CHECK: memref.store %{{.*}}, %[[P]][%[[CHUNK]], %{{.*}}, %{{.*}}]
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = {{.*}} to (%[[M]], %[[L]])
// CHECK: scf.for {{.*}} iter_args
// CHECK: memref.load %[[P]]
// CHECK-NOT: linalg.matmul
func.func @matmuls(%a: memref<2x70000xf32>, %b: memref<70000x3xf32>, %c: memref<2x3xf32>,
                   %d: memref<128x64xf32>, %e: memref<64x256xf32>, %f: memref<128x256xf32>,
                   %g: memref<2x?xf32>, %h: memref<?x3xf32>, %i: memref<?x?xf32>) {
  linalg.matmul ins(%a, %b : memref<2x70000xf32>, memref<70000x3xf32>) outs(%c : memref<2x3xf32>)
  linalg.matmul ins(%d, %e : memref<128x64xf32>, memref<64x256xf32>) outs(%f : memref<128x256xf32>)
  linalg.matmul ins(%g, %h : memref<2x?xf32>, memref<?x3xf32>) outs(%c : memref<2x3xf32>)
  linalg.matmul ins(%i, %i : memref<?x?xf32>, memref<?x?xf32>) outs(%i : memref<?x?xf32>)
  return
}

// -----

// A run-time matmul's zeros (kiln.matmul's fill) move next to the combine
// of its chunks, whose thread per output starts from them: two launches,
// no fill, though the output's sizes are read (memref.dim) in between.
// CHECK-LABEL: func @filled_run_time_matmul
// CHECK-NOT: linalg.fill
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK-NOT: memref.load %arg2
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[ZERO]]) -> (f32)
// CHECK-NOT: linalg.fill
func.func @filled_run_time_matmul(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %c: memref<?x?xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<?x?xf32>)
  linalg.matmul ins(%a, %b : memref<?x?xf32>, memref<?x?xf32>) outs(%c : memref<?x?xf32>)
  return
}
