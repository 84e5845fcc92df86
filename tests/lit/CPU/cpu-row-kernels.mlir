// RUN: kiln-opt %s --kiln-cpu-row-kernels --split-input-file | FileCheck %s
// RUN: kiln-opt %s --kiln-cpu-row-kernels=threads=16 --split-input-file | FileCheck %s --check-prefix=MANY

// A softmax as the CPU pipeline has it before vectorising: a row max, the
// exponentials, their row sum and the quotient, each over all rows. It
// becomes one parallel loop over rows running the four stages on the row;
// both statistics only the chain uses become scalars on the stack, freed at
// the end of each row, and the exponentials, which only the quotient reads
// last, go into the output's row, which the quotient then updates in place.
// CHECK-LABEL: func @softmax
// CHECK-NOT: memref.alloc(
// CHECK: scf.parallel (%[[I:.*]]) = (%{{.*}}) to (%c8{{.*}}) step
// CHECK: %[[SP:.*]] = llvm.intr.stacksave : !llvm.ptr
// CHECK-DAG: %[[MAX:.*]] = memref.alloca() {alignment = 64 : i64} : memref<f32>
// CHECK-DAG: %[[EXPS:.*]] = memref.subview %arg1[%[[I]], 0] [1, 64] [1, 1] : memref<8x64xf32> to memref<64xf32, strided<[1], offset: ?>>
// CHECK-DAG: %[[SUM:.*]] = memref.alloca() {alignment = 64 : i64} : memref<f32>
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[MAX]] : memref<f32>)
// CHECK: %[[X:.*]] = memref.subview %arg0[%[[I]], 0] [1, 64] [1, 1] : memref<8x64xf32> to memref<64xf32, strided<[1], offset: ?>>
// CHECK: linalg.generic {indexing_maps = [#[[ROW:.*]], #[[SCALAR:.*]]], iterator_types = ["reduction"]} ins(%[[X]] : {{.*}}) outs(%[[MAX]] : memref<f32>)
// CHECK: linalg.generic {indexing_maps = [#[[ROW]], #[[SCALAR]], #[[ROW]]], iterator_types = ["parallel"]} ins(%{{.*}}, %[[MAX]] : {{.*}}) outs(%[[EXPS]] :
// CHECK: math.exp
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[SUM]] : memref<f32>)
// CHECK: linalg.generic {{.*}} ins(%[[EXPS]] : {{.*}}) outs(%[[SUM]] : memref<f32>)
// CHECK: %[[OUT:.*]] = memref.subview %arg1[%[[I]], 0] [1, 64] [1, 1]
// CHECK: linalg.generic {{.*}} ins(%[[EXPS]], %[[SUM]] : {{.*}}) outs(%[[OUT]] :
// CHECK: llvm.intr.stackrestore %[[SP]]
// CHECK: } {kiln.min_task_size = 1 : index}
// CHECK-NOT: linalg.generic
// CHECK-NOT: memref.dealloc
// CHECK: return
// Fewer rows (8) than threads (16): the stages keep their own loops, whose
// elementwise ones use every thread.
// MANY-LABEL: func @softmax
// MANY-NOT: scf.parallel
// MANY-LABEL: func @run_time_row
#row = affine_map<(d0, d1) -> (d0, d1)>
#stat = affine_map<(d0, d1) -> (d0)>
func.func @softmax(%x: memref<8x64xf32>, %out: memref<8x64xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %max = memref.alloc() : memref<8xf32>
  linalg.fill ins(%ninf : f32) outs(%max : memref<8xf32>)
  linalg.generic {indexing_maps = [#row, #stat], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x64xf32>) outs(%max : memref<8xf32>) {
  ^bb0(%a: f32, %m: f32):
    %r = arith.maximumf %a, %m : f32
    linalg.yield %r : f32
  }
  %exps = memref.alloc() : memref<8x64xf32>
  linalg.generic {indexing_maps = [#row, #stat, #row], iterator_types = ["parallel", "parallel"]}
      ins(%x, %max : memref<8x64xf32>, memref<8xf32>) outs(%exps : memref<8x64xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %s = arith.subf %a, %m : f32
    %e = math.exp %s : f32
    linalg.yield %e : f32
  }
  %sum = memref.alloc() : memref<8xf32>
  linalg.fill ins(%zero : f32) outs(%sum : memref<8xf32>)
  linalg.generic {indexing_maps = [#row, #stat], iterator_types = ["parallel", "reduction"]}
      ins(%exps : memref<8x64xf32>) outs(%sum : memref<8xf32>) {
  ^bb0(%e: f32, %s: f32):
    %r = arith.addf %e, %s fastmath<reassoc> : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#row, #stat, #row], iterator_types = ["parallel", "parallel"]}
      ins(%exps, %sum : memref<8x64xf32>, memref<8xf32>) outs(%out : memref<8x64xf32>) {
  ^bb0(%e: f32, %s: f32, %o: f32):
    %q = arith.divf %e, %s : f32
    linalg.yield %q : f32
  }
  memref.dealloc %max : memref<8xf32>
  memref.dealloc %exps : memref<8x64xf32>
  memref.dealloc %sum : memref<8xf32>
  return
}

// -----

// A row of run-time length: the same loop over rows; the exponentials stay
// a buffer of their own (a row of any length would not fit the stack),
// written and read back row by row.
// CHECK-LABEL: func @run_time_row
// CHECK: %[[EXPS:.*]] = memref.alloc(%{{.*}}) : memref<8x?xf32>
// CHECK: scf.parallel
// CHECK: memref.alloca() {alignment = 64 : i64} : memref<f32>
// CHECK-NOT: memref.alloca
// CHECK: memref.subview %[[EXPS]][%{{.*}}, 0] [1, %{{.*}}] [1, 1] : memref<8x?xf32> to memref<?xf32, strided<[1], offset: ?>>
// CHECK: } {kiln.min_task_size = 1 : index}
// CHECK: memref.dealloc %[[EXPS]]
#row = affine_map<(d0, d1) -> (d0, d1)>
#stat = affine_map<(d0, d1) -> (d0)>
func.func @run_time_row(%x: memref<8x?xf32>, %out: memref<8x?xf32>) {
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %n = memref.dim %x, %c1 : memref<8x?xf32>
  %exps = memref.alloc(%n) : memref<8x?xf32>
  linalg.generic {indexing_maps = [#row, #row], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<8x?xf32>) outs(%exps : memref<8x?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %e = math.exp %a : f32
    linalg.yield %e : f32
  }
  %sum = memref.alloc() : memref<8xf32>
  linalg.fill ins(%zero : f32) outs(%sum : memref<8xf32>)
  linalg.generic {indexing_maps = [#row, #stat], iterator_types = ["parallel", "reduction"]}
      ins(%exps : memref<8x?xf32>) outs(%sum : memref<8xf32>) {
  ^bb0(%e: f32, %s: f32):
    %r = arith.addf %e, %s fastmath<reassoc> : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#row, #stat, #row], iterator_types = ["parallel", "parallel"]}
      ins(%exps, %sum : memref<8x?xf32>, memref<8xf32>) outs(%out : memref<8x?xf32>) {
  ^bb0(%e: f32, %s: f32, %o: f32):
    %q = arith.divf %e, %s : f32
    linalg.yield %q : f32
  }
  memref.dealloc %exps : memref<8x?xf32>
  memref.dealloc %sum : memref<8xf32>
  return
}

// -----

// A stage that reads what the chain writes from other rows (a transpose)
// would read rows not yet written: no loop over rows.
// CHECK-LABEL: func @other_rows
// CHECK-NOT: scf.parallel
#row = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1, d0)>
#stat = affine_map<(d0, d1) -> (d0)>
func.func @other_rows(%x: memref<64x64xf32>, %out: memref<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %sq = memref.alloc() : memref<64x64xf32>
  linalg.generic {indexing_maps = [#row, #row], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<64x64xf32>) outs(%sq : memref<64x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    linalg.yield %m : f32
  }
  %sum = memref.alloc() : memref<64xf32>
  linalg.fill ins(%zero : f32) outs(%sum : memref<64xf32>)
  linalg.generic {indexing_maps = [#col, #stat], iterator_types = ["parallel", "reduction"]}
      ins(%sq : memref<64x64xf32>) outs(%sum : memref<64xf32>) {
  ^bb0(%e: f32, %s: f32):
    %r = arith.addf %e, %s fastmath<reassoc> : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#row, #stat, #row], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : memref<64x64xf32>, memref<64xf32>) outs(%out : memref<64x64xf32>) {
  ^bb0(%e: f32, %s: f32, %o: f32):
    %q = arith.divf %e, %s : f32
    linalg.yield %q : f32
  }
  memref.dealloc %sq : memref<64x64xf32>
  memref.dealloc %sum : memref<64xf32>
  return
}

// -----

// A statistic that is the program's output is filled and reduced row by
// row in place (a view of the row's element), after its view is made.
// CHECK-LABEL: func @statistic_output
// CHECK: scf.parallel (%[[I:.*]]) =
// CHECK: %[[S:.*]] = memref.subview %arg1[%[[I]]] [1] [1] : memref<8xf32> to memref<f32, strided<[], offset: ?>>
// CHECK-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%[[S]] : memref<f32, strided<[], offset: ?>>)
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction"]
// CHECK-SAME: outs(%{{.*}} : memref<f32, strided<[], offset: ?>>)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel"]
// CHECK: } {kiln.min_task_size = 1 : index}
#row = affine_map<(d0, d1) -> (d0, d1)>
#stat = affine_map<(d0, d1) -> (d0)>
func.func @statistic_output(%x: memref<8x64xf32>, %sum: memref<8xf32>, %out: memref<8x64xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%sum : memref<8xf32>)
  linalg.generic {indexing_maps = [#row, #stat], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x64xf32>) outs(%sum : memref<8xf32>) {
  ^bb0(%e: f32, %s: f32):
    %r = arith.addf %e, %s fastmath<reassoc> : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#row, #stat, #row], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : memref<8x64xf32>, memref<8xf32>) outs(%out : memref<8x64xf32>) {
  ^bb0(%e: f32, %s: f32, %o: f32):
    %q = arith.divf %e, %s : f32
    linalg.yield %q : f32
  }
  return
}

// -----

// A buffer the chain writes that a view (made between the stages) takes
// past the chain stays a buffer of its own, and the view stays.
// CHECK-LABEL: func @view_escapes
// CHECK: %[[N:.*]] = memref.alloc() : memref<8x64xf32>
// CHECK: %[[V:.*]] = memref.collapse_shape %[[N]]
// CHECK: scf.parallel
// CHECK: memref.subview %[[N]]
// CHECK: } {kiln.min_task_size = 1 : index}
// CHECK: memref.copy %[[V]], %arg2
#row = affine_map<(d0, d1) -> (d0, d1)>
#stat = affine_map<(d0, d1) -> (d0)>
func.func @view_escapes(%x: memref<8x64xf32>, %out: memref<8x64xf32>, %flat: memref<512xf32>) {
  %zero = arith.constant 0.0 : f32
  %sum = memref.alloc() : memref<8xf32>
  linalg.fill ins(%zero : f32) outs(%sum : memref<8xf32>)
  linalg.generic {indexing_maps = [#row, #stat], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x64xf32>) outs(%sum : memref<8xf32>) {
  ^bb0(%e: f32, %s: f32):
    %r = arith.addf %e, %s fastmath<reassoc> : f32
    linalg.yield %r : f32
  }
  %n = memref.alloc() : memref<8x64xf32>
  linalg.generic {indexing_maps = [#row, #stat, #row], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : memref<8x64xf32>, memref<8xf32>) outs(%n : memref<8x64xf32>) {
  ^bb0(%e: f32, %s: f32, %o: f32):
    %q = arith.divf %e, %s : f32
    linalg.yield %q : f32
  }
  %v = memref.collapse_shape %n [[0, 1]] : memref<8x64xf32> into memref<512xf32>
  linalg.generic {indexing_maps = [#row, #row], iterator_types = ["parallel", "parallel"]}
      ins(%n : memref<8x64xf32>) outs(%out : memref<8x64xf32>) {
  ^bb0(%e: f32, %o: f32):
    %m = arith.mulf %e, %e : f32
    linalg.yield %m : f32
  }
  memref.copy %v, %flat : memref<512xf32> to memref<512xf32>
  memref.dealloc %sum : memref<8xf32>
  memref.dealloc %n : memref<8x64xf32>
  return
}

// -----

// Rows counted by a temporary (the first stage broadcasts into it): the
// loop runs to the temporary's size operand, not to a memref.dim of the
// allocation, which goes (its rows are the output's).
// Too few rows (fewer than two here, as the threads are) take the else
// branch: the stages as they were, over all rows, with the temporaries in
// full, deallocated there.
// CHECK-LABEL: func @rows_of_a_temporary
// CHECK: %[[N:.*]] = memref.dim %arg1, %c0
// CHECK-NOT: memref.alloc(
// CHECK: %[[ENOUGH:.*]] = arith.cmpi uge, %[[N]], %c2
// CHECK: scf.if %[[ENOUGH]] {
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%[[N]]) step
// CHECK: memref.subview %arg1[%{{.*}}, 0] [1, 64] [1, 1]
// CHECK: } {kiln.min_task_size = 1 : index}
// CHECK-NEXT: } else {
// CHECK-NEXT: %[[T:.*]] = memref.alloc(%[[N]]) : memref<?x64xf32>
// CHECK-NEXT: %[[SUM:.*]] = memref.alloc(%[[N]]) : memref<?xf32>
// CHECK-NEXT: linalg.generic {{.*}} ins(%arg0 : memref<64xf32>) outs(%[[T]] : memref<?x64xf32>)
// CHECK: linalg.fill {{.*}} outs(%[[SUM]] : memref<?xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[T]] : memref<?x64xf32>) outs(%[[SUM]] : memref<?xf32>)
// CHECK: linalg.generic {{.*}} outs(%arg1 : memref<?x64xf32>)
// CHECK: memref.dealloc %[[T]]
// CHECK-NEXT: memref.dealloc %[[SUM]]
// CHECK-NEXT: }
// CHECK-NEXT: return
// MANY-LABEL: func @rows_of_a_temporary
// MANY: arith.cmpi uge, %{{.*}}, %c16
#row = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#stat = affine_map<(d0, d1) -> (d0)>
func.func @rows_of_a_temporary(%w: memref<64xf32>, %out: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %n = memref.dim %out, %c0 : memref<?x64xf32>
  %t = memref.alloc(%n) : memref<?x64xf32>
  linalg.generic {indexing_maps = [#col, #row], iterator_types = ["parallel", "parallel"]}
      ins(%w : memref<64xf32>) outs(%t : memref<?x64xf32>) {
  ^bb0(%e: f32, %o: f32):
    %m = arith.mulf %e, %e : f32
    linalg.yield %m : f32
  }
  %sum = memref.alloc(%n) : memref<?xf32>
  linalg.fill ins(%zero : f32) outs(%sum : memref<?xf32>)
  linalg.generic {indexing_maps = [#row, #stat], iterator_types = ["parallel", "reduction"]}
      ins(%t : memref<?x64xf32>) outs(%sum : memref<?xf32>) {
  ^bb0(%e: f32, %s: f32):
    %r = arith.addf %e, %s fastmath<reassoc> : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#row, #stat, #row], iterator_types = ["parallel", "parallel"]}
      ins(%t, %sum : memref<?x64xf32>, memref<?xf32>) outs(%out : memref<?x64xf32>) {
  ^bb0(%e: f32, %s: f32, %o: f32):
    %q = arith.divf %e, %s : f32
    linalg.yield %q : f32
  }
  memref.dealloc %t : memref<?x64xf32>
  memref.dealloc %sum : memref<?xf32>
  return
}

// -----

// Two chains in one block, the first's temporary deallocated inside the
// second (moved after its loop, then erased with the temporary); a dim of
// one in the rows is no loop dim (its index is 0).
// CHECK-LABEL: func @two_chains
// CHECK: scf.parallel (%[[I:.*]]) = (%{{.*}}) to (%c8
// CHECK: memref.subview %arg0[0, %[[I]], 0] [1, 1, 64] [1, 1, 1]
// CHECK: } {kiln.min_task_size = 1 : index}
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%c4
// CHECK: } {kiln.min_task_size = 1 : index}
// CHECK-NOT: memref.dealloc
// CHECK: return
#row3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#stat3 = affine_map<(d0, d1, d2) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, d1)>
#stat = affine_map<(d0, d1) -> (d0)>
func.func @two_chains(%x: memref<1x8x64xf32>, %o: memref<1x8x64xf32>,
                      %y: memref<4x32xf32>, %p: memref<4x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %m = memref.alloc() : memref<1x8xf32>
  linalg.fill ins(%zero : f32) outs(%m : memref<1x8xf32>)
  linalg.generic {indexing_maps = [#row3, #stat3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : memref<1x8x64xf32>) outs(%m : memref<1x8xf32>) {
  ^bb0(%e: f32, %s: f32):
    %r = arith.addf %e, %s fastmath<reassoc> : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#row3, #stat3, #row3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %m : memref<1x8x64xf32>, memref<1x8xf32>) outs(%o : memref<1x8x64xf32>) {
  ^bb0(%e: f32, %s: f32, %out: f32):
    %q = arith.divf %e, %s : f32
    linalg.yield %q : f32
  }
  %s2 = memref.alloc() : memref<4xf32>
  linalg.fill ins(%zero : f32) outs(%s2 : memref<4xf32>)
  memref.dealloc %m : memref<1x8xf32>
  linalg.generic {indexing_maps = [#row, #stat], iterator_types = ["parallel", "reduction"]}
      ins(%y : memref<4x32xf32>) outs(%s2 : memref<4xf32>) {
  ^bb0(%e: f32, %s: f32):
    %r = arith.addf %e, %s fastmath<reassoc> : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#row, #stat, #row], iterator_types = ["parallel", "parallel"]}
      ins(%y, %s2 : memref<4x32xf32>, memref<4xf32>) outs(%p : memref<4x32xf32>) {
  ^bb0(%e: f32, %s: f32, %out: f32):
    %q = arith.divf %e, %s : f32
    linalg.yield %q : f32
  }
  memref.dealloc %s2 : memref<4xf32>
  return
}

// -----

// A fill of a buffer the chain does not write, between its stages, would
// move: no loop over rows.
// CHECK-LABEL: func @other_fill
// CHECK-NOT: scf.parallel
#row = affine_map<(d0, d1) -> (d0, d1)>
#stat = affine_map<(d0, d1) -> (d0)>
func.func @other_fill(%x: memref<8x64xf32>, %out: memref<8x64xf32>, %other: memref<8x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %sum = memref.alloc() : memref<8xf32>
  linalg.fill ins(%zero : f32) outs(%sum : memref<8xf32>)
  linalg.generic {indexing_maps = [#row, #stat], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x64xf32>) outs(%sum : memref<8xf32>) {
  ^bb0(%e: f32, %s: f32):
    %r = arith.addf %e, %s fastmath<reassoc> : f32
    linalg.yield %r : f32
  }
  linalg.fill ins(%zero : f32) outs(%other : memref<8x64xf32>)
  linalg.generic {indexing_maps = [#row, #stat, #row], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : memref<8x64xf32>, memref<8xf32>) outs(%out : memref<8x64xf32>) {
  ^bb0(%e: f32, %s: f32, %o: f32):
    %q = arith.divf %e, %s : f32
    linalg.yield %q : f32
  }
  memref.dealloc %sum : memref<8xf32>
  return
}

// -----

// A softmax over dim 0 (a column chain): one parallel loop over slabs of
// columns, each running the four stages on every row of its columns. The
// statistics become a slab row on the stack, the exponentials the output's
// slab. With 16 threads the slabs narrow to 64 columns (256 bytes) so that
// each thread has one.
// CHECK-LABEL: func @column_softmax
// CHECK-NOT: memref.alloc(
// CHECK: scf.parallel (%[[J:.*]]) = (%{{.*}}) to (%c2{{.*}}) step
// CHECK: %[[C:.*]] = arith.muli %[[J]], %c512
// CHECK: %[[SP:.*]] = llvm.intr.stacksave : !llvm.ptr
// CHECK-DAG: %[[MAX:.*]] = memref.alloca() {alignment = 64 : i64} : memref<512xf32>
// CHECK-DAG: %[[EXPS:.*]] = memref.subview %arg1[0, %[[C]]] [64, 512] [1, 1] : memref<64x1024xf32> to memref<64x512xf32, strided<[1024, 1], offset: ?>>
// CHECK-DAG: %[[SUM:.*]] = memref.alloca() {alignment = 64 : i64} : memref<512xf32>
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[MAX]] : memref<512xf32>)
// CHECK: %[[X:.*]] = memref.subview %arg0[0, %[[C]]] [64, 512] [1, 1] : memref<64x1024xf32> to memref<64x512xf32, strided<[1024, 1], offset: ?>>
// CHECK: linalg.generic {indexing_maps = [#[[ALL:.*]], #[[COL:.*]]], iterator_types = ["reduction", "parallel"]} ins(%[[X]] : {{.*}}) outs(%[[MAX]] : memref<512xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[ALL]], #[[COL]], #[[ALL]]], iterator_types = ["parallel", "parallel"]} ins(%{{.*}}, %[[MAX]] : {{.*}}) outs(%[[EXPS]] :
// CHECK: math.exp
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[SUM]] : memref<512xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]} ins(%[[EXPS]] : {{.*}}) outs(%[[SUM]] : memref<512xf32>)
// CHECK: %[[OUT:.*]] = memref.subview %arg1[0, %[[C]]] [64, 512] [1, 1]
// CHECK: linalg.generic {{.*}} ins(%[[EXPS]], %[[SUM]] : {{.*}}) outs(%[[OUT]] :
// CHECK: llvm.intr.stackrestore %[[SP]]
// CHECK: } {kiln.min_task_size = 1 : index}
// CHECK-NOT: linalg.generic
// CHECK-NOT: memref.dealloc
// CHECK: return
// MANY-LABEL: func @column_softmax
// MANY: scf.parallel (%{{.*}}) = (%{{.*}}) to (%c16{{.*}}) step
// MANY: memref.alloca() {alignment = 64 : i64} : memref<64xf32>
// MANY: memref.subview %arg1[0, %{{.*}}] [64, 64] [1, 1]
// MANY: } {kiln.min_task_size = 1 : index}
#all = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @column_softmax(%x: memref<64x1024xf32>, %out: memref<64x1024xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %max = memref.alloc() : memref<1024xf32>
  linalg.fill ins(%ninf : f32) outs(%max : memref<1024xf32>)
  linalg.generic {indexing_maps = [#all, #col], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<64x1024xf32>) outs(%max : memref<1024xf32>) {
  ^bb0(%a: f32, %m: f32):
    %r = arith.maximumf %a, %m : f32
    linalg.yield %r : f32
  }
  %exps = memref.alloc() : memref<64x1024xf32>
  linalg.generic {indexing_maps = [#all, #col, #all], iterator_types = ["parallel", "parallel"]}
      ins(%x, %max : memref<64x1024xf32>, memref<1024xf32>) outs(%exps : memref<64x1024xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %s = arith.subf %a, %m : f32
    %e = math.exp %s : f32
    linalg.yield %e : f32
  }
  %sum = memref.alloc() : memref<1024xf32>
  linalg.fill ins(%zero : f32) outs(%sum : memref<1024xf32>)
  linalg.generic {indexing_maps = [#all, #col], iterator_types = ["reduction", "parallel"]}
      ins(%exps : memref<64x1024xf32>) outs(%sum : memref<1024xf32>) {
  ^bb0(%e: f32, %s: f32):
    %r = arith.addf %e, %s fastmath<reassoc> : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#all, #col, #all], iterator_types = ["parallel", "parallel"]}
      ins(%exps, %sum : memref<64x1024xf32>, memref<1024xf32>) outs(%out : memref<64x1024xf32>) {
  ^bb0(%e: f32, %s: f32, %o: f32):
    %q = arith.divf %e, %s : f32
    linalg.yield %q : f32
  }
  memref.dealloc %max : memref<1024xf32>
  memref.dealloc %exps : memref<64x1024xf32>
  memref.dealloc %sum : memref<1024xf32>
  return
}

// -----

// Slabs that do not divide the columns (3000 in slabs of 1488): the last
// one is narrower, every view and slab temporary cut to its width.
// CHECK-LABEL: func @narrower_last_slab
// CHECK: scf.parallel (%[[J:.*]]) = (%{{.*}}) to (%c3{{.*}}) step
// CHECK: %[[C:.*]] = arith.muli %[[J]], %c1488
// CHECK: %[[LEFT:.*]] = arith.subi %c3000{{.*}}, %[[C]]
// CHECK: %[[W:.*]] = arith.minui %[[LEFT]], %c1488
// CHECK: %[[SUM:.*]] = memref.alloca() {alignment = 64 : i64} : memref<1488xf32>
// CHECK: %[[S:.*]] = memref.subview %[[SUM]][0] [%[[W]]] [1] : memref<1488xf32> to memref<?xf32, strided<[1]>>
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[S]] :
// CHECK: %[[X:.*]] = memref.subview %arg0[0, %[[C]]] [21, %[[W]]] [1, 1] : memref<21x3000xf32> to memref<21x?xf32, strided<[3000, 1], offset: ?>>
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]} ins(%[[X]] : {{.*}}) outs(%[[S]] :
// CHECK: memref.subview %arg1[0, %[[C]]] [21, %[[W]]] [1, 1]
// CHECK: } {kiln.min_task_size = 1 : index}
#all = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @narrower_last_slab(%x: memref<21x3000xf32>, %out: memref<21x3000xf32>) {
  %zero = arith.constant 0.0 : f32
  %sum = memref.alloc() : memref<3000xf32>
  linalg.fill ins(%zero : f32) outs(%sum : memref<3000xf32>)
  linalg.generic {indexing_maps = [#all, #col], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<21x3000xf32>) outs(%sum : memref<3000xf32>) {
  ^bb0(%e: f32, %s: f32):
    %r = arith.addf %e, %s fastmath<reassoc> : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#all, #col, #all], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : memref<21x3000xf32>, memref<3000xf32>) outs(%out : memref<21x3000xf32>) {
  ^bb0(%e: f32, %s: f32, %o: f32):
    %q = arith.divf %e, %s : f32
    linalg.yield %q : f32
  }
  memref.dealloc %sum : memref<3000xf32>
  return
}

// -----

// So many rows (2048) that even a slab of 256-byte rows would outgrow L2's
// share: the stages stay apart.
// CHECK-LABEL: func @too_many_rows
// CHECK-NOT: scf.parallel
#all = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @too_many_rows(%x: memref<2048x100xf32>, %out: memref<2048x100xf32>) {
  %zero = arith.constant 0.0 : f32
  %sum = memref.alloc() : memref<100xf32>
  linalg.fill ins(%zero : f32) outs(%sum : memref<100xf32>)
  linalg.generic {indexing_maps = [#all, #col], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<2048x100xf32>) outs(%sum : memref<100xf32>) {
  ^bb0(%e: f32, %s: f32):
    %r = arith.addf %e, %s fastmath<reassoc> : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#all, #col, #all], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : memref<2048x100xf32>, memref<100xf32>) outs(%out : memref<2048x100xf32>) {
  ^bb0(%e: f32, %s: f32, %o: f32):
    %q = arith.divf %e, %s : f32
    linalg.yield %q : f32
  }
  memref.dealloc %sum : memref<100xf32>
  return
}

// -----

// Over the channels of an NCHW image: H and W, the last dims of every
// buffer, collapse into one row of 512 columns, so that a slab is 21 x 512
// (as wide as over dim 0 of a 21 x 1024 tensor, not 21 x 64); the loop
// outside the channels (N) is the parallel loop's. With 16 threads, each
// image's columns are 8 slabs of 64.
// CHECK-LABEL: func @channels
// CHECK-DAG: %[[XC:.*]] = memref.collapse_shape %arg0 {{\[}}[0], [1], [2, 3]] : memref<2x21x8x64xf32> into memref<2x21x512xf32>
// CHECK-DAG: %[[OC:.*]] = memref.collapse_shape %arg1 {{\[}}[0], [1], [2, 3]]
// CHECK: scf.parallel (%[[N:.*]]) = (%{{.*}}) to (%c2{{.*}}) step
// CHECK: %[[STAT:.*]] = memref.alloca() {alignment = 64 : i64} : memref<512xf32>
// CHECK: %[[X:.*]] = memref.subview %[[XC]][%[[N]], 0, 0] [1, 21, 512] [1, 1, 1] : memref<2x21x512xf32> to memref<21x512xf32, strided<[512, 1], offset: ?>>
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]} ins(%[[X]] : {{.*}}) outs(%[[STAT]] : memref<512xf32>)
// CHECK: memref.subview %[[OC]][%[[N]], 0, 0] [1, 21, 512] [1, 1, 1]
// CHECK: } {kiln.min_task_size = 1 : index}
// MANY-LABEL: func @channels
// MANY: scf.parallel (%[[N:.*]], %[[S:.*]]) = (%{{.*}}, %{{.*}}) to (%c2{{.*}}, %c8{{.*}}) step
// MANY: memref.alloca() {alignment = 64 : i64} : memref<64xf32>
// MANY: } {kiln.min_task_size = 1 : index}
#all = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
func.func @channels(%x: memref<2x21x8x64xf32>, %out: memref<2x21x8x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %sum = memref.alloc() : memref<2x8x64xf32>
  linalg.fill ins(%zero : f32) outs(%sum : memref<2x8x64xf32>)
  linalg.generic {indexing_maps = [#all, #ch], iterator_types = ["parallel", "reduction", "parallel", "parallel"]}
      ins(%x : memref<2x21x8x64xf32>) outs(%sum : memref<2x8x64xf32>) {
  ^bb0(%e: f32, %s: f32):
    %r = arith.addf %e, %s fastmath<reassoc> : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#all, #ch, #all], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %sum : memref<2x21x8x64xf32>, memref<2x8x64xf32>) outs(%out : memref<2x21x8x64xf32>) {
  ^bb0(%e: f32, %s: f32, %o: f32):
    %q = arith.divf %e, %s : f32
    linalg.yield %q : f32
  }
  memref.dealloc %sum : memref<2x8x64xf32>
  return
}

// -----

// A buffer that holds W but not H (a weight per column) keeps H and W
// apart: the slabs are W's 64 columns, H a loop of the parallel loop.
// CHECK-LABEL: func @columns_not_collapsed
// CHECK-NOT: memref.collapse_shape
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = (%{{.*}}, %{{.*}}) to (%c2{{.*}}, %c8{{.*}}) step
// CHECK: memref.alloca() {alignment = 64 : i64} : memref<64xf32>
#all = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
#w = affine_map<(d0, d1, d2, d3) -> (d3)>
func.func @columns_not_collapsed(%x: memref<2x21x8x64xf32>, %scale: memref<64xf32>, %out: memref<2x21x8x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %sum = memref.alloc() : memref<2x8x64xf32>
  linalg.fill ins(%zero : f32) outs(%sum : memref<2x8x64xf32>)
  linalg.generic {indexing_maps = [#all, #ch], iterator_types = ["parallel", "reduction", "parallel", "parallel"]}
      ins(%x : memref<2x21x8x64xf32>) outs(%sum : memref<2x8x64xf32>) {
  ^bb0(%e: f32, %s: f32):
    %r = arith.addf %e, %s fastmath<reassoc> : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#all, #ch, #w, #all], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %sum, %scale : memref<2x21x8x64xf32>, memref<2x8x64xf32>, memref<64xf32>) outs(%out : memref<2x21x8x64xf32>) {
  ^bb0(%e: f32, %s: f32, %k: f32, %o: f32):
    %q = arith.divf %e, %s : f32
    %m = arith.mulf %q, %k : f32
    linalg.yield %m : f32
  }
  memref.dealloc %sum : memref<2x8x64xf32>
  return
}

// -----

// Run-time H: the columns (H x 64) are known only at run time; slabs of
// 1552 columns (about 128 KiB of 21 f32 rows), the last narrower (minui).
// CHECK-LABEL: func @channels_run_time_rows
// CHECK: %[[COLUMNS:.*]] = arith.muli %{{.*}}, %c64
// CHECK: %[[SLABS:.*]] = arith.ceildivui %[[COLUMNS]], %c1552
// CHECK: %[[XC:.*]] = memref.collapse_shape %arg0 {{\[}}[0], [1], [2, 3]] : memref<2x21x?x64xf32> into memref<2x21x?xf32>
// CHECK: scf.parallel (%[[N:.*]], %[[S:.*]]) = (%{{.*}}, %{{.*}}) to (%c2{{.*}}, %[[SLABS]]) step
// CHECK: %[[FIRST:.*]] = arith.muli %[[S]], %c1552
// CHECK: %[[LEFT:.*]] = arith.subi %[[COLUMNS]], %[[FIRST]]
// CHECK: %[[WIDTH:.*]] = arith.minui %[[LEFT]], %c1552
// CHECK: memref.subview %[[XC]][%[[N]], 0, %[[FIRST]]] [1, 21, %[[WIDTH]]] [1, 1, 1]
#all = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
func.func @channels_run_time_rows(%x: memref<2x21x?x64xf32>, %out: memref<2x21x?x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %c2 = arith.constant 2 : index
  %h = memref.dim %x, %c2 : memref<2x21x?x64xf32>
  %sum = memref.alloc(%h) : memref<2x?x64xf32>
  linalg.fill ins(%zero : f32) outs(%sum : memref<2x?x64xf32>)
  linalg.generic {indexing_maps = [#all, #ch], iterator_types = ["parallel", "reduction", "parallel", "parallel"]}
      ins(%x : memref<2x21x?x64xf32>) outs(%sum : memref<2x?x64xf32>) {
  ^bb0(%e: f32, %s: f32):
    %r = arith.addf %e, %s fastmath<reassoc> : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#all, #ch, #all], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %sum : memref<2x21x?x64xf32>, memref<2x?x64xf32>) outs(%out : memref<2x21x?x64xf32>) {
  ^bb0(%e: f32, %s: f32, %o: f32):
    %q = arith.divf %e, %s : f32
    linalg.yield %q : f32
  }
  memref.dealloc %sum : memref<2x?x64xf32>
  return
}

// -----

// A temporary whose last reader is a reduction has no output to share: its
// slab (128 KiB, past the 64 KiB on the stack) is allocated in the loop and
// freed at its end; with 16 threads (64 columns, 16 KiB) it fits the stack.
// CHECK-LABEL: func @heap_slab
// CHECK: scf.parallel
// CHECK: %[[T:.*]] = memref.alloc() {alignment = 64 : i64} : memref<64x512xf32>
// CHECK: linalg.generic {{.*}} outs(%[[T]] : memref<64x512xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[T]] : memref<64x512xf32>)
// CHECK: memref.dealloc %[[T]] : memref<64x512xf32>
// CHECK: } {kiln.min_task_size = 1 : index}
// MANY-LABEL: func @heap_slab
// MANY: memref.alloca() {alignment = 64 : i64} : memref<64x64xf32>
// MANY-NOT: memref.alloc()
// MANY: } {kiln.min_task_size = 1 : index}
#all = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @heap_slab(%x: memref<64x1024xf32>, %out: memref<64x1024xf32>) {
  %zero = arith.constant 0.0 : f32
  %t = memref.alloc() : memref<64x1024xf32>
  linalg.generic {indexing_maps = [#all, #all], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<64x1024xf32>) outs(%t : memref<64x1024xf32>) {
  ^bb0(%a: f32, %o: f32):
    %e = math.exp %a : f32
    linalg.yield %e : f32
  }
  %sum = memref.alloc() : memref<1024xf32>
  linalg.fill ins(%zero : f32) outs(%sum : memref<1024xf32>)
  linalg.generic {indexing_maps = [#all, #col], iterator_types = ["reduction", "parallel"]}
      ins(%t : memref<64x1024xf32>) outs(%sum : memref<1024xf32>) {
  ^bb0(%e: f32, %s: f32):
    %r = arith.addf %e, %s fastmath<reassoc> : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#all, #col, #all], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : memref<64x1024xf32>, memref<1024xf32>) outs(%out : memref<64x1024xf32>) {
  ^bb0(%e: f32, %s: f32, %o: f32):
    %q = arith.divf %e, %s : f32
    linalg.yield %q : f32
  }
  memref.dealloc %t : memref<64x1024xf32>
  memref.dealloc %sum : memref<1024xf32>
  return
}

// -----

// A stage before the last reader of the temporary reads the output (its
// old values): the temporary keeps a row of its own.
// CHECK-LABEL: func @output_read_first
// CHECK: scf.parallel
// CHECK: %[[T:.*]] = memref.alloca() {alignment = 64 : i64} : memref<64xf32>
// CHECK: linalg.generic {{.*}} outs(%[[T]] : memref<64xf32>)
// CHECK: } {kiln.min_task_size = 1 : index}
#row = affine_map<(d0, d1) -> (d0, d1)>
#stat = affine_map<(d0, d1) -> (d0)>
func.func @output_read_first(%x: memref<8x64xf32>, %out: memref<8x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %t = memref.alloc() : memref<8x64xf32>
  linalg.generic {indexing_maps = [#row, #row], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<8x64xf32>) outs(%t : memref<8x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %e = math.exp %a : f32
    linalg.yield %e : f32
  }
  %sum = memref.alloc() : memref<8xf32>
  linalg.fill ins(%zero : f32) outs(%sum : memref<8xf32>)
  linalg.generic {indexing_maps = [#row, #row, #stat], iterator_types = ["parallel", "reduction"]}
      ins(%t, %out : memref<8x64xf32>, memref<8x64xf32>) outs(%sum : memref<8xf32>) {
  ^bb0(%e: f32, %o: f32, %s: f32):
    %a = arith.addf %e, %o : f32
    %r = arith.addf %a, %s fastmath<reassoc> : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#row, #stat, #row], iterator_types = ["parallel", "parallel"]}
      ins(%t, %sum : memref<8x64xf32>, memref<8xf32>) outs(%out : memref<8x64xf32>) {
  ^bb0(%e: f32, %s: f32, %o: f32):
    %q = arith.divf %e, %s : f32
    linalg.yield %q : f32
  }
  memref.dealloc %t : memref<8x64xf32>
  memref.dealloc %sum : memref<8xf32>
  return
}

// -----

// The stage reading the temporary last also reads the output (it adds to
// it): the temporary keeps a row of its own.
// CHECK-LABEL: func @output_added_to
// CHECK: scf.parallel
// CHECK: %[[T:.*]] = memref.alloca() {alignment = 64 : i64} : memref<64xf32>
// CHECK: linalg.generic {{.*}} outs(%[[T]] : memref<64xf32>)
// CHECK: } {kiln.min_task_size = 1 : index}
#row = affine_map<(d0, d1) -> (d0, d1)>
#stat = affine_map<(d0, d1) -> (d0)>
func.func @output_added_to(%x: memref<8x64xf32>, %out: memref<8x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %t = memref.alloc() : memref<8x64xf32>
  linalg.generic {indexing_maps = [#row, #row], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<8x64xf32>) outs(%t : memref<8x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %e = math.exp %a : f32
    linalg.yield %e : f32
  }
  %sum = memref.alloc() : memref<8xf32>
  linalg.fill ins(%zero : f32) outs(%sum : memref<8xf32>)
  linalg.generic {indexing_maps = [#row, #stat], iterator_types = ["parallel", "reduction"]}
      ins(%t : memref<8x64xf32>) outs(%sum : memref<8xf32>) {
  ^bb0(%e: f32, %s: f32):
    %r = arith.addf %e, %s fastmath<reassoc> : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#row, #stat, #row, #row], iterator_types = ["parallel", "parallel"]}
      ins(%t, %sum, %out : memref<8x64xf32>, memref<8xf32>, memref<8x64xf32>) outs(%out : memref<8x64xf32>) {
  ^bb0(%e: f32, %s: f32, %p: f32, %o: f32):
    %q = arith.divf %e, %s : f32
    %a = arith.addf %q, %p : f32
    linalg.yield %a : f32
  }
  memref.dealloc %t : memref<8x64xf32>
  memref.dealloc %sum : memref<8xf32>
  return
}
