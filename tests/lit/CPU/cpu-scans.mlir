// RUN: kiln-opt %s --kiln-cpu-scans=vector-width=4 --canonicalize --split-input-file | FileCheck %s

// A cumsum over dim 0 of 100x70 f16 (sums in f32; 4 registers of 4 f32 =
// 16 lanes a step): a parallel loop over the first 64 columns, 16 a step,
// each carrying its running sums down the 100 rows in a vector, loading
// and storing whole vectors of each row; the last 6 columns keep the
// scalar loop in a parallel loop of their own.
// CHECK-LABEL: func @over_rows
// CHECK: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : vector<16xf32>
// CHECK: scf.parallel (%[[J:.*]]) = (%c0) to (%c64) step (%c16)
// CHECK: scf.for %[[I:.*]] = %c0 to %c100 step %c1 iter_args(%[[ACC:.*]] = %[[ZERO]]) -> (vector<16xf32>)
// CHECK: %[[ROW:.*]] = vector.load %arg0[%[[I]], %[[J]]] : memref<100x70xf16>, vector<16xf16>
// CHECK: %[[WIDE:.*]] = arith.extf %[[ROW]] : vector<16xf16> to vector<16xf32>
// CHECK: %[[SUM:.*]] = arith.addf %[[ACC]], %[[WIDE]] : vector<16xf32>
// CHECK: %[[NARROW:.*]] = arith.truncf %[[SUM]] : vector<16xf32> to vector<16xf16>
// CHECK: vector.store %[[NARROW]], %arg1[%[[I]], %[[J]]]
// CHECK: scf.yield %[[SUM]]
// CHECK: } {kiln.min_task_size = 1 : index}
// CHECK: scf.parallel (%[[K:.*]]) = (%c64) to (%c70) step (%c1)
// CHECK: scf.for {{.*}} -> (f32)
// CHECK: memref.load %arg0[%{{.*}}, %[[K]]]
// CHECK: } {kiln.min_task_size = 10 : index}
func.func @over_rows(%x: memref<100x70xf16>, %y: memref<100x70xf16>) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c70 = arith.constant 70 : index
  %c100 = arith.constant 100 : index
  scf.for %j = %c0 to %c70 step %c1 {
    %s = scf.for %i = %c0 to %c100 step %c1 iter_args(%acc = %zero) -> (f32) {
      %v = memref.load %x[%i, %j] : memref<100x70xf16>
      %w = arith.extf %v : f16 to f32
      %n = arith.addf %acc, %w : f32
      %t = arith.truncf %n : f32 to f16
      memref.store %t, %y[%i, %j] : memref<100x70xf16>
      scf.yield %n : f32
    }
  }
  return
}

// -----

// A cumsum along the innermost dim of ?x300 i32: the rows in parallel,
// each its serial loop.
// CHECK-LABEL: func @along_rows
// CHECK: %[[N:.*]] = memref.dim %arg0, %c0
// CHECK: scf.parallel (%[[R:.*]]) = (%c0) to (%[[N]]) step (%c1)
// CHECK: scf.for %[[I:.*]] = %c0 to %c300 step %c1 iter_args(%{{.*}}) -> (i32)
// CHECK: memref.load %arg0[%[[R]], %[[I]]]
// CHECK: } {kiln.min_task_size = 3 : index}
// CHECK-NOT: vector
func.func @along_rows(%x: memref<?x300xi32>, %y: memref<?x300xi32>) {
  %zero = arith.constant 0 : i32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c300 = arith.constant 300 : index
  %rows = memref.dim %x, %c0 : memref<?x300xi32>
  scf.for %r = %c0 to %rows step %c1 {
    %s = scf.for %i = %c0 to %c300 step %c1 iter_args(%acc = %zero) -> (i32) {
      %v = memref.load %x[%r, %i] : memref<?x300xi32>
      %n = arith.addi %acc, %v : i32
      memref.store %n, %y[%r, %i] : memref<?x300xi32>
      scf.yield %n : i32
    }
  }
  return
}

// -----

// A single row stays serial; a loop that is not a scan (it starts from 1)
// is left alone.
// CHECK-LABEL: func @left_alone
// CHECK-NOT: scf.parallel
func.func @left_alone(%x: memref<300xf32>, %y: memref<300xf32>, %z: memref<4x300xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c300 = arith.constant 300 : index
  %s = scf.for %i = %c0 to %c300 step %c1 iter_args(%acc = %zero) -> (f32) {
    %v = memref.load %x[%i] : memref<300xf32>
    %n = arith.addf %acc, %v : f32
    memref.store %n, %y[%i] : memref<300xf32>
    scf.yield %n : f32
  }
  scf.for %r = %c0 to %c4 step %c1 {
    %t = scf.for %i = %c0 to %c300 step %c1 iter_args(%acc = %one) -> (f32) {
      %v = memref.load %z[%r, %i] : memref<4x300xf32>
      %n = arith.addf %acc, %v : f32
      memref.store %n, %z[%r, %i] : memref<4x300xf32>
      scf.yield %n : f32
    }
  }
  return
}
