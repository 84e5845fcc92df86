// RUN: kiln-opt %s --kiln-gpu-scatter-adds --split-input-file | FileCheck %s
// RUN: kiln-opt %s --kiln-gpu-scatter-adds="atomic-types=f32,i32" --split-input-file | FileCheck %s --check-prefix=ATOMIC

// A scatter_add along dim 0 of 1000 x 64 from 5000 x 64. Without atomics
// the 64 columns run in parallel, each adding its 5000 rows in order; with
// f32 atomics every element of the index is a parallel iteration.
// CHECK-LABEL: func @rows
// CHECK: scf.parallel (%[[J:.*]]) = (%c0) to (%c64) step (%c1)
// CHECK-NEXT: scf.for %[[I:.*]] = %c0 to %c5000 step %c1
// CHECK: memref.load %arg0[%[[I]], %[[J]]]
// CHECK: memref.store
// CHECK-NOT: scf.for
// ATOMIC-LABEL: func @rows
// ATOMIC: scf.parallel (%[[I:.*]], %[[J:.*]]) = (%c0, %c0) to (%c5000, %c64)
// ATOMIC-NOT: memref.store
// ATOMIC: %[[S:.*]] = memref.load %arg1[%[[I]], %[[J]]]
// ATOMIC: memref.atomic_rmw addf %[[S]], %arg2[%{{.*}}, %[[J]]]
// ATOMIC-NOT: memref.store
func.func @rows(%idx: memref<5000x64xi64>, %src: memref<5000x64xf32>, %out: memref<1000x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c5000 = arith.constant 5000 : index
  %c0_i64 = arith.constant 0 : i64
  %c999 = arith.constant 999 : i64
  scf.for %i = %c0 to %c5000 step %c1 {
    scf.for %j = %c0 to %c64 step %c1 {
      %e = memref.load %idx[%i, %j] : memref<5000x64xi64>
      %lo = arith.maxsi %e, %c0_i64 : i64
      %hi = arith.minsi %lo, %c999 : i64
      %k = arith.index_cast %hi : i64 to index
      %cur = memref.load %out[%k, %j] : memref<1000x64xf32>
      %s = memref.load %src[%i, %j] : memref<5000x64xf32>
      %sum = arith.addf %cur, %s : f32
      memref.store %sum, %out[%k, %j] : memref<1000x64xf32>
    }
  }
  return
}

// -----

// One dim, i32: atomics where the target has them, else the serial loop.
// CHECK-LABEL: func @counts
// CHECK-NOT: scf.parallel
// CHECK: scf.for
// ATOMIC-LABEL: func @counts
// ATOMIC: scf.parallel
// ATOMIC: memref.atomic_rmw addi
func.func @counts(%idx: memref<100000xi64>, %src: memref<100000xi32>, %out: memref<100xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 100000 : index
  scf.for %i = %c0 to %n step %c1 {
    %e = memref.load %idx[%i] : memref<100000xi64>
    %k = arith.index_cast %e : i64 to index
    %cur = memref.load %out[%k] : memref<100xi32>
    %s = memref.load %src[%i] : memref<100000xi32>
    %sum = arith.addi %cur, %s : i32
    memref.store %sum, %out[%k] : memref<100xi32>
  }
  return
}

// -----

// f16 sums in f32 and rounds after each add: no single atomic does that, so
// the rows run in parallel and each adds its row's 2000 in order.
// ATOMIC-LABEL: func @rounded
// ATOMIC: scf.parallel (%[[R:.*]]) = (%c0) to (%c64) step (%c1)
// ATOMIC-NEXT: scf.for
// ATOMIC-NOT: memref.atomic_rmw
// ATOMIC: arith.truncf
// ATOMIC: memref.store %{{.*}}, %arg2[%[[R]], %{{.*}}]
func.func @rounded(%idx: memref<64x2000xi64>, %src: memref<64x2000xf16>, %out: memref<64x300xf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c2000 = arith.constant 2000 : index
  scf.for %r = %c0 to %c64 step %c1 {
    scf.for %j = %c0 to %c2000 step %c1 {
      %e = memref.load %idx[%r, %j] : memref<64x2000xi64>
      %k = arith.index_cast %e : i64 to index
      %cur = memref.load %out[%r, %k] : memref<64x300xf16>
      %s = memref.load %src[%r, %j] : memref<64x2000xf16>
      %a = arith.extf %cur : f16 to f32
      %b = arith.extf %s : f16 to f32
      %sum = arith.addf %a, %b : f32
      %t = arith.truncf %sum : f32 to f16
      memref.store %t, %out[%r, %k] : memref<64x300xf16>
    }
  }
  return
}
