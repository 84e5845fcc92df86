// RUN: kiln-opt %s --kiln-cuda-tile-matmul="tensor-cores=1 wgmma=1" | FileCheck %s

// A tuned wgmma tiling (kiln.tuned, template cuda.matmul.wgmma; 300 x 264 x
// 72 anchors to 256 x 256 x 64) replaces the default (128x256, 4 stages):
// 128x128 outputs in 6 stages (6 x (32 KiB + two mbarriers) + 1 KiB),
// m64n128k16.
// CHECK: module attributes {kiln.tune_keys = ["cuda.matmul.wgmma@319a095c4b560aae:matmul:bf16,bf16,f32:256x256x64"]
// CHECK-LABEL: func @bf16
// CHECK: dynamic_shared_memory_size %c197728_i32
// CHECK-COUNT-12: nvvm.mbarrier.init
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c32768_i32
// CHECK: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 128, k = 16>
module attributes {kiln.tuned = {"cuda.matmul.wgmma@319a095c4b560aae:matmul:bf16,bf16,f32:256x256x64" = "128x6x0"}} {
func.func @bf16(%a: memref<300x72xbf16>, %b: memref<72x264xbf16>, %c: memref<300x264xf32>) {
  linalg.matmul ins(%a, %b : memref<300x72xbf16>, memref<72x264xbf16>) outs(%c : memref<300x264xf32>)
  return
}
}
