// RUN: kiln-opt %s --kiln-gpu-map-loops="max-grid=1000,65535,65535" | FileCheck %s

// 2^20 elements are 4096 blocks of 256 threads; with at most 1000 blocks in
// x, 820 blocks run 5 rounds each, 820 * 256 elements apart, skipping what
// lies past the end.
// CHECK-LABEL: func @capped
// CHECK: scf.parallel (%[[B:.*]]) = (%{{.*}}) to (%c209920) step
// CHECK: scf.parallel
// CHECK: scf.for %[[R:.*]] = %{{.*}} to %c5
// CHECK: %[[OFF:.*]] = arith.muli %[[R]], %c209920{{.*}}
// CHECK: %[[AT:.*]] = arith.addi %[[B]], %[[OFF]]
// CHECK: arith.cmpi slt, %[[AT]], %c1048576{{.*}}
// CHECK: scf.if
// CHECK: memref.store
func.func @capped(%m: memref<1048576xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 1048576 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    memref.store %f, %m[%i] : memref<1048576xf32>
    scf.reduce
  }
  return
}
