// RUN: kiln-opt %s --kiln-cuda-tile-matmul="tensor-cores=1 wgmma=1 fill-blocks=132" | FileCheck %s --check-prefix=WGMMA
// RUN: kiln-opt %s --kiln-cuda-tile-matmul="tensor-cores=1 fill-blocks=132" | FileCheck %s --check-prefix=MMA

// The wgmma and mma kernels' untuned choices (tiles narrowed, K split by
// the fill estimate) are mostly none of their candidates, so the default
// candidate, forced by a tune file, builds the untuned choice: the tuner
// times it first (docs/autotune.md). 512 x 1024 by K 8192 in bf16, forced
// to each template's default: wgmma narrows to 128 x 128 tiles in 4 parts
// of K, mma to 128 x 64 tiles (16 x 4 blocks, 2 stages of 128 + 64 rows
// of 128 bytes) -- as untuned (cuda-tile-matmul-wgmma-split-k.mlir).
// WGMMA: memref.alloc() : memref<4x512x1024xf32>
// WGMMA: <m = 64, n = 128, k = 16>
// MMA: gpu.launch blocks({{[^)]*}}) in (%{{[a-z0-9]+}} = %c16{{[_0-9]*}}, %{{[a-z0-9]+}} = %c4{{[_0-9]*}},
// MMA-SAME: dynamic_shared_memory_size %c49152_i32
module attributes {kiln.tuned = {
    "cuda.matmul.wgmma@319a095c4b560aae:matmul:bf16,bf16,f32:512x1024x8192" = "256x4x0",
    "cuda.matmul.mma@d1f2ffea98df30a2:matmul:bf16,bf16,f32:512x1024x8192" = "256x2x128"}} {
func.func @few_tiles(%a: memref<512x8192xbf16>, %b: memref<8192x1024xbf16>, %c: memref<512x1024xf32>) {
  linalg.matmul ins(%a, %b : memref<512x8192xbf16>, memref<8192x1024xbf16>) outs(%c : memref<512x1024xf32>)
  return
}
}
