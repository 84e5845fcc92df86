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

// -----

// One dim of f16 and no f16 atomics: with f32 atomics the output is summed
// in an f32 temporary and rounded back once, else the serial loop stays.
// CHECK-LABEL: func @halves
// CHECK-NOT: scf.parallel
// CHECK-NOT: memref.alloc
// ATOMIC-LABEL: func @halves
// ATOMIC: %[[SUMS:.*]] = memref.alloc() : memref<100xf32>
// ATOMIC: linalg.generic {{.*}} ins(%arg2 : memref<100xf16>) outs(%[[SUMS]] : memref<100xf32>)
// ATOMIC: arith.extf
// ATOMIC: scf.parallel (%[[I:.*]]) = (%c0) to (%c100000) step (%c1)
// ATOMIC: %[[S:.*]] = memref.load %arg1[%[[I]]]
// ATOMIC: %[[W:.*]] = arith.extf %[[S]] : f16 to f32
// ATOMIC: memref.atomic_rmw addf %[[W]], %[[SUMS]]
// ATOMIC-NOT: memref.store
// ATOMIC: linalg.generic {{.*}} ins(%[[SUMS]] : memref<100xf32>) outs(%arg2 : memref<100xf16>)
// ATOMIC: arith.truncf
func.func @halves(%idx: memref<100000xi64>, %src: memref<100000xf16>, %out: memref<100xf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 100000 : index
  scf.for %i = %c0 to %n step %c1 {
    %e = memref.load %idx[%i] : memref<100000xi64>
    %k = arith.index_cast %e : i64 to index
    %cur = memref.load %out[%k] : memref<100xf16>
    %s = memref.load %src[%i] : memref<100000xf16>
    %a = arith.extf %cur : f16 to f32
    %b = arith.extf %s : f16 to f32
    %sum = arith.addf %a, %b : f32
    %t = arith.truncf %sum : f32 to f16
    memref.store %t, %out[%k] : memref<100xf16>
  }
  return
}

// -----

// i8 adds wrap: summed in an i32 temporary (i32 atomics) and truncated
// back, the same bits.
// ATOMIC-LABEL: func @bytes
// ATOMIC: %[[SUMS:.*]] = memref.alloc() : memref<16xi32>
// ATOMIC: arith.extsi
// ATOMIC: scf.parallel
// ATOMIC: %[[S:.*]] = memref.load %arg1
// ATOMIC: %[[W:.*]] = arith.extsi %[[S]] : i8 to i32
// ATOMIC: memref.atomic_rmw addi %[[W]], %[[SUMS]]
// ATOMIC: arith.trunci
func.func @bytes(%idx: memref<1000xi64>, %src: memref<1000xi8>, %out: memref<16xi8>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 1000 : index
  scf.for %i = %c0 to %n step %c1 {
    %e = memref.load %idx[%i] : memref<1000xi64>
    %k = arith.index_cast %e : i64 to index
    %cur = memref.load %out[%k] : memref<16xi8>
    %s = memref.load %src[%i] : memref<1000xi8>
    %sum = arith.addi %cur, %s : i8
    memref.store %sum, %out[%k] : memref<16xi8>
  }
  return
}

// -----

// Columns of 40000 indices each: longer than a thread adds in order
// (lavapipe ends a thread's loops after 65535 iterations), so widened too.
// CHECK-LABEL: func @long_columns
// CHECK: scf.parallel (%{{.*}}) = (%c0) to (%c4) step (%c1)
// CHECK-NEXT: scf.for
// ATOMIC-LABEL: func @long_columns
// ATOMIC: memref.alloc() : memref<4x300xf32>
// ATOMIC: scf.parallel (%{{.*}}, %{{.*}}) = (%c0, %c0) to (%c4, %c40000)
// ATOMIC: memref.atomic_rmw addf
func.func @long_columns(%idx: memref<4x40000xi64>, %src: memref<4x40000xf16>, %out: memref<4x300xf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c40000 = arith.constant 40000 : index
  scf.for %r = %c0 to %c4 step %c1 {
    scf.for %j = %c0 to %c40000 step %c1 {
      %e = memref.load %idx[%r, %j] : memref<4x40000xi64>
      %k = arith.index_cast %e : i64 to index
      %cur = memref.load %out[%r, %k] : memref<4x300xf16>
      %s = memref.load %src[%r, %j] : memref<4x40000xf16>
      %a = arith.extf %cur : f16 to f32
      %b = arith.extf %s : f16 to f32
      %sum = arith.addf %a, %b : f32
      %t = arith.truncf %sum : f32 to f16
      memref.store %t, %out[%r, %k] : memref<4x300xf16>
    }
  }
  return
}
