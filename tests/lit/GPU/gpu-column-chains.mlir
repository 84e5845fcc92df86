// RUN: kiln-opt %s --kiln-gpu-column-chains --split-input-file | FileCheck %s

// A softmax over dim 0 of 21 rows: one parallel loop over the 1024
// columns, each running the four stages as loops over the rows (unrolled
// by 4, the 21st row after them). The max and the sum stay in registers
// (their buffers go), the exponentials go into the output, which the last
// stage then updates in place.
// CHECK-LABEL: func @column_softmax
// CHECK-NOT: memref.alloc
// CHECK: scf.parallel (%[[J:.*]]) = (%{{.*}}) to (%c1024{{.*}}) step
// CHECK: %[[MAX:.*]] = scf.for %{{.*}} = %{{.*}} to %c20{{.*}} step %c4{{.*}} iter_args(%{{.*}} = %cst{{.*}}) -> (f32)
// CHECK-COUNT-4: arith.maximumf
// CHECK: scf.yield
// CHECK: %[[LASTX:.*]] = memref.load %arg0[%c20{{.*}}, %[[J]]]
// CHECK: %[[MAX21:.*]] = arith.maximumf %[[LASTX]], %[[MAX]]
// CHECK: scf.for
// CHECK: arith.subf %{{.*}}, %[[MAX21]]
// CHECK: math.exp
// CHECK: memref.store %{{.*}}, %arg1[%{{.*}}, %[[J]]]
// CHECK: %[[SUM:.*]] = scf.for {{.*}} iter_args
// CHECK: memref.load %arg1
// CHECK: arith.addf
// CHECK: %[[SUM21:.*]] = arith.addf %{{.*}}, %[[SUM]]
// CHECK: scf.for
// CHECK: %[[E:.*]] = memref.load %arg1[%[[R:.*]], %[[J]]]
// CHECK: arith.divf %[[E]], %[[SUM21]]
// CHECK: memref.store %{{.*}}, %arg1[%[[R]], %[[J]]]
// CHECK: scf.reduce
// CHECK-NOT: linalg.generic
// CHECK-NOT: memref.dealloc
// CHECK: return
#all = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @column_softmax(%x: memref<21x1024xf32>, %out: memref<21x1024xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %max = memref.alloc() : memref<1024xf32>
  linalg.fill ins(%ninf : f32) outs(%max : memref<1024xf32>)
  linalg.generic {indexing_maps = [#all, #col], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<21x1024xf32>) outs(%max : memref<1024xf32>) {
  ^bb0(%a: f32, %m: f32):
    %r = arith.maximumf %a, %m : f32
    linalg.yield %r : f32
  }
  %exps = memref.alloc() : memref<21x1024xf32>
  linalg.generic {indexing_maps = [#all, #col, #all], iterator_types = ["parallel", "parallel"]}
      ins(%x, %max : memref<21x1024xf32>, memref<1024xf32>) outs(%exps : memref<21x1024xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %s = arith.subf %a, %m : f32
    %e = math.exp %s : f32
    linalg.yield %e : f32
  }
  %sum = memref.alloc() : memref<1024xf32>
  linalg.fill ins(%zero : f32) outs(%sum : memref<1024xf32>)
  linalg.generic {indexing_maps = [#all, #col], iterator_types = ["reduction", "parallel"]}
      ins(%exps : memref<21x1024xf32>) outs(%sum : memref<1024xf32>) {
  ^bb0(%e: f32, %s: f32):
    %r = arith.addf %e, %s fastmath<reassoc> : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#all, #col, #all], iterator_types = ["parallel", "parallel"]}
      ins(%exps, %sum : memref<21x1024xf32>, memref<1024xf32>) outs(%out : memref<21x1024xf32>) {
  ^bb0(%e: f32, %s: f32, %o: f32):
    %q = arith.divf %e, %s : f32
    linalg.yield %q : f32
  }
  memref.dealloc %max : memref<1024xf32>
  memref.dealloc %exps : memref<21x1024xf32>
  memref.dealloc %sum : memref<1024xf32>
  return
}

// -----

// Over the channels of NCHW: a column per (n, h, w), the channels' sum
// returned too (a buffer of the function's, stored as well as kept in a
// register for the next stage); the temporary whose last reader is the
// sum stays a buffer of its own, read and written at the column.
// CHECK-LABEL: func @channels
// CHECK: %[[T:.*]] = memref.alloc() : memref<2x3x4x64xf32>
// CHECK: scf.parallel (%[[N:.*]], %[[H:.*]], %[[W:.*]]) = (%{{.*}}, %{{.*}}, %{{.*}}) to (%c2{{.*}}, %c4{{.*}}, %c64{{.*}}) step
// CHECK: scf.for %[[C:.*]] =
// CHECK: memref.store %{{.*}}, %[[T]][%[[N]], %[[C]], %[[H]], %[[W]]]
// CHECK: %[[SUM:.*]] = scf.for
// CHECK: memref.load %[[T]]
// CHECK: memref.store %[[SUM]], %arg1[%[[N]], %[[H]], %[[W]]]
// CHECK: scf.for
// CHECK: arith.divf %{{.*}}, %[[SUM]]
// CHECK: memref.store %{{.*}}, %arg2[%[[N]], %{{.*}}, %[[H]], %[[W]]]
// CHECK: scf.reduce
// CHECK: memref.dealloc %[[T]]
#all = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
func.func @channels(%x: memref<2x3x4x64xf32>, %sum: memref<2x4x64xf32>, %out: memref<2x3x4x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %t = memref.alloc() : memref<2x3x4x64xf32>
  linalg.generic {indexing_maps = [#all, #all], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : memref<2x3x4x64xf32>) outs(%t : memref<2x3x4x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %e = math.exp %a : f32
    linalg.yield %e : f32
  }
  linalg.fill ins(%zero : f32) outs(%sum : memref<2x4x64xf32>)
  linalg.generic {indexing_maps = [#all, #ch], iterator_types = ["parallel", "reduction", "parallel", "parallel"]}
      ins(%t : memref<2x3x4x64xf32>) outs(%sum : memref<2x4x64xf32>) {
  ^bb0(%e: f32, %s: f32):
    %r = arith.addf %e, %s fastmath<reassoc> : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#all, #ch, #all], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %sum : memref<2x3x4x64xf32>, memref<2x4x64xf32>) outs(%out : memref<2x3x4x64xf32>) {
  ^bb0(%e: f32, %s: f32, %o: f32):
    %q = arith.divf %e, %s : f32
    linalg.yield %q : f32
  }
  memref.dealloc %t : memref<2x3x4x64xf32>
  return
}

// -----

// 1024 rows (longer than 64): a chain would run the elementwise stages on
// a thread per column, 300 threads, so it stays as it is.
// CHECK-LABEL: func @few_long_columns
// CHECK-NOT: scf.parallel
// CHECK-COUNT-2: linalg.generic
#all = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @few_long_columns(%x: memref<1024x300xf32>, %out: memref<1024x300xf32>) {
  %zero = arith.constant 0.0 : f32
  %sum = memref.alloc() : memref<300xf32>
  linalg.fill ins(%zero : f32) outs(%sum : memref<300xf32>)
  linalg.generic {indexing_maps = [#all, #col], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<1024x300xf32>) outs(%sum : memref<300xf32>) {
  ^bb0(%e: f32, %s: f32):
    %r = arith.addf %e, %s fastmath<reassoc> : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#all, #col, #all], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : memref<1024x300xf32>, memref<300xf32>) outs(%out : memref<1024x300xf32>) {
  ^bb0(%e: f32, %s: f32, %o: f32):
    %q = arith.divf %e, %s : f32
    linalg.yield %q : f32
  }
  memref.dealloc %sum : memref<300xf32>
  return
}

// -----

// Columns of run-time number, and a chain over the last dim (a row chain,
// kiln-gpu-row-reductions' to run): both stay as they are.
// CHECK-LABEL: func @run_time_columns
// CHECK-NOT: scf.parallel
// CHECK-COUNT-2: linalg.generic
// CHECK-LABEL: func @row_chain
// CHECK-NOT: scf.parallel
// CHECK-COUNT-2: linalg.generic
#all = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @run_time_columns(%x: memref<21x?xf32>, %sum: memref<?xf32>, %out: memref<21x?xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%sum : memref<?xf32>)
  linalg.generic {indexing_maps = [#all, #col], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<21x?xf32>) outs(%sum : memref<?xf32>) {
  ^bb0(%e: f32, %s: f32):
    %r = arith.addf %e, %s fastmath<reassoc> : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#all, #col, #all], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : memref<21x?xf32>, memref<?xf32>) outs(%out : memref<21x?xf32>) {
  ^bb0(%e: f32, %s: f32, %o: f32):
    %q = arith.divf %e, %s : f32
    linalg.yield %q : f32
  }
  return
}
func.func @row_chain(%x: memref<1024x21xf32>, %sum: memref<1024xf32>, %out: memref<1024x21xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%sum : memref<1024xf32>)
  linalg.generic {indexing_maps = [#all, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<1024x21xf32>) outs(%sum : memref<1024xf32>) {
  ^bb0(%e: f32, %s: f32):
    %r = arith.addf %e, %s fastmath<reassoc> : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#all, #row, #all], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : memref<1024x21xf32>, memref<1024xf32>) outs(%out : memref<1024x21xf32>) {
  ^bb0(%e: f32, %s: f32, %o: f32):
    %q = arith.divf %e, %s : f32
    linalg.yield %q : f32
  }
  return
}

// -----

// Reductions over dim 0 side by side (a sum, and an argmax of one row that
// folded to a constant yielded from outside its body): one loop over the
// columns, the constant carried through its stage's loop.
// CHECK-LABEL: func @yield_from_above
// CHECK: scf.parallel (%[[J:.*]]) =
// CHECK: %[[SUM:.*]] = scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (f32)
// CHECK: memref.store %[[SUM]], %arg1[%[[J]]]
// CHECK: %[[ARG:.*]] = scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (i64)
// CHECK-NEXT: memref.load
// CHECK-NEXT: scf.yield %c0_i64 : i64
// CHECK: memref.store %[[ARG]], %arg2[%[[J]]]
#all = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @yield_from_above(%x: memref<1x7xf32>, %sum: memref<7xf32>, %arg: memref<7xi64>) {
  %zero = arith.constant 0.0 : f32
  %first = arith.constant 0 : i64
  linalg.fill ins(%zero : f32) outs(%sum : memref<7xf32>)
  linalg.generic {indexing_maps = [#all, #col], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<1x7xf32>) outs(%sum : memref<7xf32>) {
  ^bb0(%e: f32, %s: f32):
    %r = arith.addf %e, %s fastmath<reassoc> : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#all, #col], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<1x7xf32>) outs(%arg : memref<7xi64>) {
  ^bb0(%e: f32, %a: i64):
    linalg.yield %first : i64
  }
  return
}
