// RUN: kiln-opt %s --kiln-cpu-flatten-parallel-loops --canonicalize | FileCheck %s

// A 7x150 loop nest (a matmul accumulating into C) becomes one loop of
// 1050 iterations, its indices recovered by div/rem.
// CHECK-LABEL: func @accumulate
// CHECK: scf.parallel (%[[I:.*]]) = (%{{.*}}) to (%c1050{{.*}}) step (%{{.*}}) {
// CHECK-DAG: arith.remsi %[[I]], %c150
// CHECK-DAG: arith.divsi %[[I]], %c150
// CHECK: scf.for
// CHECK-NOT: scf.parallel (%{{.*}}, %{{.*}})
func.func @accumulate(%a: memref<7x16xi32>, %b: memref<16x150xi32>, %c: memref<7x150xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c7 = arith.constant 7 : index
  %c16 = arith.constant 16 : index
  %c150 = arith.constant 150 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c7, %c150) step (%c1, %c1) {
    scf.for %k = %c0 to %c16 step %c1 {
      %x = memref.load %a[%i, %k] : memref<7x16xi32>
      %y = memref.load %b[%k, %j] : memref<16x150xi32>
      %z = memref.load %c[%i, %j] : memref<7x150xi32>
      %p = arith.muli %x, %y : i32
      %s = arith.addi %z, %p : i32
      memref.store %s, %c[%i, %j] : memref<7x150xi32>
    }
    scf.reduce
  }
  return
}

// Of nested loops only the level with the most iterations stays parallel:
// here the inner one (1028 iterations, collapsed) of a reduction over the
// middle dim of 2x2x4x257.
// CHECK-LABEL: func @nested
// CHECK-NOT: scf.parallel
// CHECK: scf.for %{{.*}} = %{{.*}} to %c2
// CHECK-NOT: scf.parallel
// CHECK: scf.for
// CHECK: scf.parallel (%[[J:.*]]) = (%{{.*}}) to (%c1028{{.*}}) step
// CHECK-DAG: arith.remsi %[[J]], %c257
// CHECK-DAG: arith.divsi %[[J]], %c257
// CHECK-NOT: scf.parallel
func.func @nested(%a: memref<2x2x4x257xi32>, %r: memref<2x4x257xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c257 = arith.constant 257 : index
  scf.parallel (%i) = (%c0) to (%c2) step (%c1) {
    scf.for %k = %c0 to %c2 step %c1 {
      scf.parallel (%j, %l) = (%c0, %c0) to (%c4, %c257) step (%c1, %c1) {
        %x = memref.load %a[%i, %k, %j, %l] : memref<2x2x4x257xi32>
        %y = memref.load %r[%i, %j, %l] : memref<2x4x257xi32>
        %s = arith.addi %x, %y : i32
        memref.store %s, %r[%i, %j, %l] : memref<2x4x257xi32>
        scf.reduce
      }
    }
    scf.reduce
  }
  return
}

// Here the outer one (4096 iterations) of a reduction over the middle dim
// of 4096x5x2x3; the inner one (6) runs as scf.for loops.
// CHECK-LABEL: func @nested_outer
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%c4096{{.*}}) step
// CHECK-NOT: scf.parallel
// CHECK: scf.for %{{.*}} = %{{.*}} to %c5
// CHECK: scf.for %{{.*}} = %{{.*}} to %c2
// CHECK: scf.for %{{.*}} = %{{.*}} to %c3
// CHECK-NOT: scf.parallel
func.func @nested_outer(%a: memref<4096x5x2x3xf32>, %r: memref<4096x2x3xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c4096 = arith.constant 4096 : index
  scf.parallel (%i) = (%c0) to (%c4096) step (%c1) {
    scf.for %k = %c0 to %c5 step %c1 {
      scf.parallel (%j, %l) = (%c0, %c0) to (%c2, %c3) step (%c1, %c1) {
        %x = memref.load %a[%i, %k, %j, %l] : memref<4096x5x2x3xf32>
        %y = memref.load %r[%i, %j, %l] : memref<4096x2x3xf32>
        %s = arith.addf %x, %y : f32
        memref.store %s, %r[%i, %j, %l] : memref<4096x2x3xf32>
        scf.reduce
      }
    }
    scf.reduce
  }
  return
}

// An innermost dim of run-time size runs serially inside the others (one
// dim over their product): no division by it on every iteration.
// CHECK-LABEL: func @run_time_rows
// CHECK-SAME: (%{{.*}}: memref<?x?x?xf32>, %[[A:.*]]: index, %[[B:.*]]: index, %[[N:.*]]: index)
// CHECK: %[[ROWS:.*]] = arith.muli %[[A]], %[[B]]
// CHECK: scf.parallel (%[[R:.*]]) = (%c0) to (%[[ROWS]]) step (%c1)
// CHECK: arith.remsi %[[R]], %[[B]]
// CHECK: scf.for %{{.*}} = %c0 to %[[N]] step %c16
// CHECK-NOT: arith.remsi
// CHECK: memref.store
func.func @run_time_rows(%x: memref<?x?x?xf32>, %a: index, %b: index, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i, %j, %k) = (%c0, %c0, %c0) to (%a, %b, %n) step (%c1, %c1, %c16) {
    memref.store %zero, %x[%i, %j, %k] : memref<?x?x?xf32>
    scf.reduce
  }
  return
}

// One-dim loops and loops with reductions stay as they are.
// CHECK-LABEL: func @untouched
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%c150
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = {{.*}} init
func.func @untouched(%c: memref<150xi32>, %d: memref<7x150xi32>) -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c7 = arith.constant 7 : index
  %c150 = arith.constant 150 : index
  %zero = arith.constant 0 : i32
  scf.parallel (%i) = (%c0) to (%c150) step (%c1) {
    memref.store %zero, %c[%i] : memref<150xi32>
    scf.reduce
  }
  %sum = scf.parallel (%i, %j) = (%c0, %c0) to (%c7, %c150) step (%c1, %c1) init (%zero) -> i32 {
    %v = memref.load %d[%i, %j] : memref<7x150xi32>
    scf.reduce(%v : i32) {
    ^bb0(%l: i32, %r: i32):
      %t = arith.addi %l, %r : i32
      scf.reduce.return %t : i32
    }
  }
  return %sum : i32
}
