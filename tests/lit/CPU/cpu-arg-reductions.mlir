// RUN: kiln-opt %s --kiln-cpu-arg-reductions --split-input-file | FileCheck %s

// An argmax over 4 rows of 1001: the rows in parallel; each row 32
// interleaved partials (value, index) carried by one loop over 992
// positions, combined in order (lower index wins a tie), then the last
// positions, then stored. The best value never goes through memory in the
// loop, and the partials start from the fills (the identity, index 0), so
// the rule that the first position wins is left out (it kept LLVM from
// vectorising the partials).
// CHECK-LABEL: func @rows
// CHECK: scf.parallel (%[[R:.*]]) = (%c0{{.*}}) to (%c4{{.*}}) step (%c1{{.*}})
// CHECK: %[[V0:.*]] = memref.load %[[BEST:.*]][%[[R]]]
// CHECK: %[[I0:.*]] = memref.load %arg1[%[[R]]]
// CHECK: %[[MAIN:.*]]:64 = scf.for %{{.*}} = %c0{{.*}} to %c992{{.*}} step %c32{{.*}} iter_args(%{{.*}} = %[[V0]], %{{.*}} = %[[I0]],
// CHECK-NOT: arith.cmpi eq
// CHECK-COUNT-32: arith.cmpf ogt
// CHECK-NOT: memref.store
// CHECK: scf.yield
// CHECK-COUNT-31: arith.cmpi ult
// CHECK: %[[TAIL:.*]]:2 = scf.for %{{.*}} = %c992{{.*}} to %c1001{{.*}} step %c1{{.*}} iter_args
// CHECK: memref.store %[[TAIL]]#0, %[[BEST]][%[[R]]]
// CHECK: memref.store %[[TAIL]]#1, %arg1[%[[R]]]
// CHECK-NOT: linalg.generic
#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d0)>
func.func @rows(%arg0: memref<4x1001xf32>, %arg1: memref<4xi64>) {
  %c0 = arith.constant 0 : index
  %c0_i64 = arith.constant 0 : i64
  %ninf = arith.constant 0xFF800000 : f32
  %best = memref.alloc() : memref<4xf32>
  linalg.fill ins(%ninf : f32) outs(%best : memref<4xf32>)
  linalg.fill ins(%c0_i64 : i64) outs(%arg1 : memref<4xi64>)
  linalg.generic {indexing_maps = [#in, #out, #out], iterator_types = ["parallel", "reduction"]}
      ins(%arg0 : memref<4x1001xf32>) outs(%best, %arg1 : memref<4xf32>, memref<4xi64>) {
  ^bb0(%in: f32, %out: f32, %out_i: i64):
    %better = arith.cmpf ogt, %in, %out : f32
    %pos = linalg.index 1 : index
    %first = arith.cmpi eq, %pos, %c0 : index
    %take = arith.ori %better, %first : i1
    %pos_i64 = arith.index_castui %pos : index to i64
    %v = arith.select %take, %in, %out : f32
    %i = arith.select %take, %pos_i64, %out_i : i64
    linalg.yield %v, %i : f32, i64
  }
  return
}

// -----

// Rows of 10 (shorter than 64) keep one partial: no combining per row.
// CHECK-LABEL: func @short_rows
// CHECK: scf.parallel
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c10{{.*}} step %c1{{.*}} iter_args(%{{[^,]*}} = %{{[^,]*}}, %{{[^,]*}} = %{{[^)]*}}) -> (f32, i64)
// CHECK-NOT: arith.cmpi ult
// CHECK: memref.store
#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d0)>
func.func @short_rows(%arg0: memref<4x10xf32>, %arg1: memref<4xi64>) {
  %c0 = arith.constant 0 : index
  %c0_i64 = arith.constant 0 : i64
  %ninf = arith.constant 0xFF800000 : f32
  %best = memref.alloc() : memref<4xf32>
  linalg.fill ins(%ninf : f32) outs(%best : memref<4xf32>)
  linalg.fill ins(%c0_i64 : i64) outs(%arg1 : memref<4xi64>)
  linalg.generic {indexing_maps = [#in, #out, #out], iterator_types = ["parallel", "reduction"]}
      ins(%arg0 : memref<4x10xf32>) outs(%best, %arg1 : memref<4xf32>, memref<4xi64>) {
  ^bb0(%in: f32, %out: f32, %out_i: i64):
    %better = arith.cmpf ogt, %in, %out : f32
    %pos = linalg.index 1 : index
    %first = arith.cmpi eq, %pos, %c0 : index
    %take = arith.ori %better, %first : i1
    %pos_i64 = arith.index_castui %pos : index to i64
    %v = arith.select %take, %in, %out : f32
    %i = arith.select %take, %pos_i64, %out_i : i64
    linalg.yield %v, %i : f32, i64
  }
  return
}

// -----

// Two rows of 200000 (fewer than the threads): one after the other, each
// in four slices of 50000 in parallel (tasks of one slice at least), each
// slice reduced from the fills into its entry of a partials buffer (on the
// function's stack frame, once); a loop combines the four in order, then
// the row's result is stored.
// CHECK-LABEL: func @few_rows
// CHECK-DAG: %[[VALUES:.*]] = memref.alloca() : memref<4xf32>
// CHECK-DAG: %[[INDICES:.*]] = memref.alloca() : memref<4xi64>
// CHECK: scf.for %[[ROW:.*]] = %c0{{.*}} to %c2{{.*}} step %c1
// CHECK: scf.parallel (%[[S:.*]]) = (%c0{{.*}}) to (%c4{{.*}}) step (%c1{{.*}})
// CHECK: %[[BEGIN:.*]] = arith.muli %[[S]], %c50000
// CHECK: scf.for %{{.*}} = %[[BEGIN]] to %{{.*}} step %c32
// CHECK: memref.store %{{.*}}, %[[VALUES]][%[[S]]]
// CHECK: memref.store %{{.*}}, %[[INDICES]][%[[S]]]
// CHECK: } {kiln.min_task_size = 1 : index}
// CHECK: %[[BEST:.*]]:2 = scf.for %[[K:.*]] = %c1{{.*}} to %c4{{.*}} step %c1{{.*}} iter_args
// CHECK: memref.load %[[VALUES]][%[[K]]]
// CHECK: arith.cmpi ult
// CHECK: memref.store %[[BEST]]#1, %arg1[%[[ROW]]]
#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d0)>
func.func @few_rows(%arg0: memref<2x200000xf32>, %arg1: memref<2xi64>) {
  %c0 = arith.constant 0 : index
  %c0_i64 = arith.constant 0 : i64
  %ninf = arith.constant 0xFF800000 : f32
  %best = memref.alloc() : memref<2xf32>
  linalg.fill ins(%ninf : f32) outs(%best : memref<2xf32>)
  linalg.fill ins(%c0_i64 : i64) outs(%arg1 : memref<2xi64>)
  linalg.generic {indexing_maps = [#in, #out, #out], iterator_types = ["parallel", "reduction"]}
      ins(%arg0 : memref<2x200000xf32>) outs(%best, %arg1 : memref<2xf32>, memref<2xi64>) {
  ^bb0(%in: f32, %out: f32, %out_i: i64):
    %better = arith.cmpf ogt, %in, %out : f32
    %pos = linalg.index 1 : index
    %first = arith.cmpi eq, %pos, %c0 : index
    %take = arith.ori %better, %first : i1
    %pos_i64 = arith.index_castui %pos : index to i64
    %v = arith.select %take, %in, %out : f32
    %i = arith.select %take, %pos_i64, %out_i : i64
    linalg.yield %v, %i : f32, i64
  }
  return
}
