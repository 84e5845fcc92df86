// RUN: kiln-opt %s --kiln-spirv-simt-matmul="max-thread-iterations=32768" --split-input-file | FileCheck %s
// RUN: not kiln-opt %s --kiln-spirv-simt-matmul="max-workgroup-bytes=16384" --split-input-file 2>/dev/null | FileCheck %s --check-prefix=SMALL
// RUN: not kiln-opt %s --kiln-spirv-simt-matmul="max-workgroup-bytes=16384" --split-input-file 2>&1 >/dev/null | FileCheck %s --check-prefix=SMALL-ERROR
// RUN: kiln-opt %s --kiln-spirv-simt-matmul="fill-blocks=132" --split-input-file 2>/dev/null | FileCheck %s --check-prefix=FILL
// RUN: not kiln-opt %s --kiln-spirv-simt-matmul="max-workgroup-bytes=16384 fill-blocks=132" --split-input-file 2>/dev/null | FileCheck %s --check-prefix=SMALL-FILL

// An f32 matmul: the SIMT kernel's default tiling (128 x 128 outputs per
// workgroup of 256 invocations, K in steps of 16 through two stages of
// 16 x 128 f32 each for A and B: 32 KiB), recorded as untuned. Workgroup
// memory is read and written lane by lane (no vector.load from a stage):
// per K step, 16 loads of 4 lanes each for A and B per invocation.
// CHECK: kiln.untuned = {"gpu.matmul.simt@40dc3cc653333b81:matmul:f32,f32,f32:256x512x512" = "128x16x8x1"}
// CHECK-LABEL: func @f32
// CHECK: gpu.launch blocks({{[^)]*}}) in (%{{[a-z0-9]+}} = %c4{{[_0-9]*}}, %{{[a-z0-9]+}} = %c3{{[_0-9]*}}, %{{[a-z0-9]+}} = %c1{{[_0-9]*}})
// CHECK-SAME: threads({{[^)]*}}) in (%{{[a-z0-9]+}} = %c256
// CHECK-SAME: workgroup({{.*}} : memref<2x16x128xf32, #gpu.address_space<workgroup>>, {{.*}} : memref<2x16x128xf32, #gpu.address_space<workgroup>>)
// CHECK: scf.for
// CHECK-NOT: vector.load %{{.*}} : memref<2x16x128xf32
// CHECK-COUNT-256: memref.load %{{.*}} : memref<2x16x128xf32, #gpu.address_space<workgroup>>
// CHECK-NOT: memref.load %{{.*}} : memref<2x16x128xf32
// CHECK: gpu.barrier
// CHECK-NEXT: scf.yield
// CHECK-NOT: linalg.matmul
// Where the driver tells the multiprocessors (132), an output of 3 x 4
// default tiles narrows to 64 x 64 ones, as on CUDA.
// FILL: kiln.untuned = {"gpu.matmul.simt@40dc3cc653333b81:matmul:f32,f32,f32:256x512x512" = "64x16x4x1"}
// SMALL: kiln.untuned = {"gpu.matmul.simt@40dc3cc653333b81:matmul:f32,f32,f32:256x512x512" = "128x8x8x1"}
// SMALL-LABEL: func @f32
// SMALL: workgroup({{.*}} : memref<2x8x128xf32, #gpu.address_space<workgroup>>, {{.*}} : memref<2x8x128xf32, #gpu.address_space<workgroup>>)
func.func @f32(%a: memref<300x500xf32>, %b: memref<500x400xf32>, %c: memref<300x400xf32>) {
  linalg.matmul ins(%a, %b : memref<300x500xf32>, memref<500x400xf32>) outs(%c : memref<300x400xf32>)
  return
}

// -----

// 1024^3 on 132 multiprocessors: 64 default tiles in 2 parts of K (128 of
// 132 filled). Where the default's 32 KiB of stages do not fit, 64 x 64
// tiles (256 blocks) as the narrow rules give, not the default's shape
// with steps of 8 and K whole (64 blocks).
// FILL: kiln.untuned = {"gpu.matmul.simt@40dc3cc653333b81:matmul:f32,f32,f32:1024x1024x1024" = "128x16x8x2"}
// FILL-LABEL: func @wide_split
// SMALL-FILL: kiln.untuned = {"gpu.matmul.simt@40dc3cc653333b81:matmul:f32,f32,f32:1024x1024x1024" = "64x16x4x1"}
// SMALL-FILL-LABEL: func @wide_split
func.func @wide_split(%a: memref<1024x1024xf32>, %b: memref<1024x1024xf32>, %c: memref<1024x1024xf32>) {
  linalg.matmul ins(%a, %b : memref<1024x1024xf32>, memref<1024x1024xf32>) outs(%c : memref<1024x1024xf32>)
  return
}

// -----

// f16 inputs (no cooperative matrices took them) are widened as staged;
// an i32 matmul stays a loop nest.
// CHECK-LABEL: func @f16_and_i32
// CHECK: gpu.launch
// CHECK: arith.extf %{{.*}} : vector<4xf16> to vector<4xf32>
// CHECK: gpu.terminator
// CHECK: linalg.matmul ins(%{{.*}} : memref<64x64xi32>, memref<64x64xi32>)
func.func @f16_and_i32(%a: memref<64x64xf16>, %b: memref<64x64xf16>, %c: memref<64x64xf32>,
                       %ia: memref<64x64xi32>, %ib: memref<64x64xi32>, %ic: memref<64x64xi32>) {
  linalg.matmul ins(%a, %b : memref<64x64xf16>, memref<64x64xf16>) outs(%c : memref<64x64xf32>)
  linalg.matmul ins(%ia, %ib : memref<64x64xi32>, memref<64x64xi32>) outs(%ic : memref<64x64xi32>)
  return
}

// -----

// Where an invocation's loop iterations are bounded (llvmpipe), a K whose
// steps would pass the bound, or one known only at run time, stays a loop
// nest (which splits K); without a bound both take the kernel.
// CHECK-LABEL: func @long_k
// CHECK-NOT: gpu.launch
// CHECK: linalg.matmul
// CHECK: linalg.matmul
// SMALL-LABEL: func @long_k
// SMALL-COUNT-2: gpu.launch
func.func @long_k(%a: memref<8x300000xf32>, %b: memref<300000x8xf32>, %c: memref<8x8xf32>,
                  %ra: memref<8x?xf32>, %rb: memref<?x8xf32>) {
  linalg.matmul ins(%a, %b : memref<8x300000xf32>, memref<300000x8xf32>) outs(%c : memref<8x8xf32>)
  linalg.matmul ins(%ra, %rb : memref<8x?xf32>, memref<?x8xf32>) outs(%c : memref<8x8xf32>)
  return
}

// -----

// Batches whose grid could pass maxComputeWorkGroupCount's z (5000 x up to
// 16 parts of K > 65535) stay a loop nest, whose grid is capped.
// CHECK-LABEL: func @many_batches
// CHECK-NOT: gpu.launch
// CHECK: linalg.batch_matmul
func.func @many_batches(%a: memref<5000x4x4xf32>, %b: memref<5000x4x4xf32>,
                        %c: memref<5000x4x4xf32>) {
  linalg.batch_matmul ins(%a, %b : memref<5000x4x4xf32>, memref<5000x4x4xf32>)
                      outs(%c : memref<5000x4x4xf32>)
  return
}

// -----

// A tuned tiling beyond the device's workgroup memory is an error (the
// autotuner skips it; the engine compiles again with the defaults).
// SMALL-ERROR: error: tuned tiling 128x16x8x1 does not fit the device's workgroup limits (32768 bytes of workgroup memory and 256 invocations; the device allows 16384 and 1024)
module attributes {kiln.tuned = {"gpu.matmul.simt@40dc3cc653333b81:matmul:f32,f32,f32:128x128x128" = "128x16x8x1"}} {
func.func @tuned_too_big(%a: memref<128x128xf32>, %b: memref<128x128xf32>, %c: memref<128x128xf32>) {
  linalg.matmul ins(%a, %b : memref<128x128xf32>, memref<128x128xf32>) outs(%c : memref<128x128xf32>)
  return
}
}
