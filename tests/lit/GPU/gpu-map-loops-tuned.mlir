// RUN: kiln-opt %s --kiln-gpu-map-loops | FileCheck %s

// A tuned block size (kiln.tuned, keyed by op "elementwise", the stored
// element type and the element count anchored to a power of two: 64 x 1000
// -> 65536) replaces the default 256 threads; the key is recorded.
// CHECK: module attributes {kiln.tune_keys = ["gpu.map_loops@9afb81bb3300d65d:elementwise:f32:65536"]
// CHECK-LABEL: func @tile
// CHECK: %[[T:.*]] = arith.muli %{{.*}}, %c64
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = ({{.*}}) to (%c1000{{.*}}, %c64{{.*}}) step (%[[T]], %{{.*}})
module attributes {kiln.tuned = {"gpu.map_loops@9afb81bb3300d65d:elementwise:f32:65536" = "64"}} {
func.func @tile(%m: memref<64x1000xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c1000 = arith.constant 1000 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c1000) step (%c1, %c1) {
    memref.store %f, %m[%i, %j] : memref<64x1000xf32>
    scf.reduce
  }
  return
}
}
