// RUN: kiln-opt %s --kiln-cuda-tile-matmul="tensor-cores=1" | FileCheck %s

// A tuned tiling (kiln.tuned; key: A, B and C's element types, M x N x K
// anchored to powers of two: 300 x 264 x 72 -> 256 x 256 x 64) replaces the
// pass options' default (128x256 outputs, 2 stages of 128 bytes): 128x128
// outputs in 4 stages of 64 bytes.
// CHECK: module attributes {kiln.tune_keys = ["cuda.matmul.mma@d1f2ffea98df30a2:matmul:bf16,bf16,f32:256x256x64"]
// CHECK-LABEL: func @bf16
// CHECK: dynamic_shared_memory_size %c65536_i32
// CHECK: memref.view {{.*}} to memref<4x128x32xbf16
// CHECK: memref.view {{.*}} to memref<4x32x128xbf16
module attributes {kiln.tuned = {"cuda.matmul.mma@d1f2ffea98df30a2:matmul:bf16,bf16,f32:256x256x64" = "128x4x64"}} {
func.func @bf16(%a: memref<300x72xbf16>, %b: memref<72x264xbf16>, %c: memref<300x264xf32>) {
  linalg.matmul ins(%a, %b : memref<300x72xbf16>, memref<72x264xbf16>) outs(%c : memref<300x264xf32>)
  return
}
}
