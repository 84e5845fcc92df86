// RUN: kiln-opt %s --kiln-cuda-tile-matmul=fill-blocks=132 --split-input-file | FileCheck %s

// The SIMT kernel's untuned tiling: 128x128 outputs per block of 256
// threads (8x8 each), K in steps of 16, where that launches at least
// fill-blocks blocks (2048^2: 256) ...
// CHECK-LABEL: func @wide
// CHECK: gpu.launch blocks({{[^)]*}}) in (%{{[a-z0-9]+}} = %c16{{[_0-9]*}}, %{{[a-z0-9]+}} = %c16{{[_0-9]*}},
// CHECK-SAME: threads({{[^)]*}}) in (%{{[a-z0-9]+}} = %c256
// CHECK-SAME: memref<2x16x128xf32, #gpu.address_space<workgroup>>
func.func @wide(%a: memref<2048x64xf32>, %b: memref<64x2048xf32>, %c: memref<2048x2048xf32>) {
  linalg.matmul ins(%a, %b : memref<2048x64xf32>, memref<64x2048xf32>) outs(%c : memref<2048x2048xf32>)
  return
}

// -----

// ... else 64x64 outputs per block of 256 threads (4x4 each): 1024^2 is
// 256 such blocks instead of 64.
// CHECK-LABEL: func @narrow
// CHECK: gpu.launch blocks({{[^)]*}}) in (%{{[a-z0-9]+}} = %c16{{[_0-9]*}}, %{{[a-z0-9]+}} = %c16{{[_0-9]*}},
// CHECK-SAME: threads({{[^)]*}}) in (%{{[a-z0-9]+}} = %c256
// CHECK-SAME: memref<2x16x64xf32, #gpu.address_space<workgroup>>
// CHECK: scf.for {{.*}} -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>) {
func.func @narrow(%a: memref<1024x64xf32>, %b: memref<64x1024xf32>, %c: memref<1024x1024xf32>) {
  linalg.matmul ins(%a, %b : memref<1024x64xf32>, memref<64x1024xf32>) outs(%c : memref<1024x1024xf32>)
  return
}

// -----

// A tuned tiling (key: the f32 matmul's M x N x K anchored to powers of
// two: 300 x 260 x 200 -> 256 x 256 x 256) replaces the untuned one: 32x32
// outputs per block of 64 threads, K in steps of 8, so 9 x 10 blocks.
// CHECK: module attributes {kiln.tune_keys = ["cuda.matmul.simt@9f6b5f7def19079a:matmul:f32,f32,f32:256x256x256"]
// CHECK-LABEL: func @tuned
// CHECK: gpu.launch blocks({{[^)]*}}) in (%{{[a-z0-9]+}} = %c9{{[_0-9]*}}, %{{[a-z0-9]+}} = %c10{{[_0-9]*}}, %{{[a-z0-9]+}} = %c1{{[_0-9]*}})
// CHECK-SAME: threads({{[^)]*}}) in (%{{[a-z0-9]+}} = %c64
// CHECK-SAME: workgroup({{.*}} : memref<2x8x32xf32, #gpu.address_space<workgroup>>, {{.*}} : memref<2x8x32xf32, #gpu.address_space<workgroup>>)
module attributes {kiln.tuned = {"cuda.matmul.simt@9f6b5f7def19079a:matmul:f32,f32,f32:256x256x256" = "32x8x4"}} {
func.func @tuned(%a: memref<300x200xf32>, %b: memref<200x260xf32>, %c: memref<300x260xf32>) {
  linalg.matmul ins(%a, %b : memref<300x200xf32>, memref<200x260xf32>) outs(%c : memref<300x260xf32>)
  return
}
}
