// RUN: kiln-opt %s --kiln-cuda-tile-matmul="tensor-cores=1 wgmma=1 wgmma-tile-n=128 wgmma-stages=3" | FileCheck %s
// RUN: kiln-opt %s --kiln-cuda-tile-matmul="tensor-cores=1 wgmma=1" | FileCheck %s --check-prefix=DEFAULT
// RUN: not kiln-opt %s --kiln-cuda-tile-matmul="tensor-cores=1 wgmma=1 wgmma-tile-n=256 wgmma-stages=4 max-shared-bytes=101376" 2>&1 | FileCheck %s --check-prefix=TOO-BIG
// RUN: not kiln-opt %s --kiln-cuda-tile-matmul="tensor-cores=1 wgmma=1 wgmma-tile-n=192" 2>&1 | FileCheck %s --check-prefix=BAD-TILE
// Without wgmma (sm_80, or KILN_CUDA_WGMMA=0) the same matmul takes mma.sync.
// RUN: kiln-opt %s --kiln-cuda-tile-matmul="tensor-cores=1" | FileCheck %s --check-prefix=MMA

// bf16 300x72 * 72x264: 3x3 blocks of 128x128 outputs, 256 threads (two
// warpgroups), three stages of 128 x 64 A and 64 x 128 B (2 blocks of 64
// columns) in 128-byte-swizzled shared memory aligned to 1024 bytes (3 x
// 32 KiB + 1 KiB), one step of K issued before the loop, K in 2 steps of 64
// (the last partial: its copies past K read nothing). Per step: the wait
// for the step's copies, the proxy fence, a barrier, the next step's
// copies, then 4 wgmma m64n128k16 (bf16, B transposed) on descriptors,
// committed and left one group in flight. C += the accumulators two
// columns at a time inside the matrix.
// CHECK-LABEL: func @bf16
// CHECK: gpu.launch blocks({{[^)]*}}) in (%{{[a-z0-9]+}} = %c3{{[_0-9]*}}, %{{[a-z0-9]+}} = %c3{{[_0-9]*}}, %{{[a-z0-9]+}} = %c1{{[_0-9]*}})
// CHECK-SAME: threads({{[^)]*}}) in (%{{[a-z0-9]+}} = %c256
// CHECK-SAME: dynamic_shared_memory_size %c99328_i32
// CHECK: %[[SHARED:.*]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// CHECK: memref.extract_aligned_pointer_as_index %[[SHARED]]
// CHECK: %[[AS:.*]] = memref.view %[[SHARED]][%{{.*}}][] : {{.*}} to memref<3x128x64xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[BS:.*]] = memref.view %[[SHARED]][%{{.*}}][] : {{.*}} to memref<3x2x64x64xbf16, #gpu.address_space<workgroup>>
// The descriptors' fixed bits: 128-byte swizzle, 8-row groups 1024 bytes
// apart; A's leading offset 16 bytes (unused), B's 8192 (a 64-column block).
// CHECK-DAG: arith.constant 4611686293305360384 : i64
// CHECK-DAG: arith.constant 4611686293338849280 : i64
// CHECK-COUNT-4: nvgpu.device_async_copy {{.*}}, %[[AS]]{{.*}} {bypassL1}
// CHECK-COUNT-4: nvgpu.device_async_copy {{.*}}, %[[BS]]{{.*}} {bypassL1}
// CHECK: %[[GROUP:.*]] = nvgpu.device_async_create_group
// CHECK: scf.for %{{.*}} = %{{.*}} to %c2{{[_0-9]*}} step %c1{{[_0-9]*}} iter_args(%{{.*}} = %{{.*}}) -> (!llvm.struct<(f32, {{(f32, )+}}f32)>)
// CHECK-NEXT: nvgpu.device_async_wait %[[GROUP]] {numGroups = 0 : i32}
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: gpu.barrier
// CHECK-COUNT-8: nvgpu.device_async_copy
// CHECK: nvgpu.device_async_create_group
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-COUNT-4: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 128, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>]
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK-NEXT: scf.yield
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: nvgpu.device_async_wait %[[GROUP]] {numGroups = 0 : i32}
// CHECK: scf.if
// CHECK: vector.load %arg2{{.*}} : memref<300x264xf32>, vector<2xf32>
// CHECK: arith.addf
// CHECK: vector.store {{.*}}, %arg2
// CHECK-NOT: linalg.matmul
// The defaults (CudaWgmmaMatmulTunables): 128x256 outputs, 4 stages
// (4 x 48 KiB + 1 KiB), m64n256k16.
// DEFAULT-LABEL: func @bf16
// DEFAULT: dynamic_shared_memory_size %c197632_i32
// DEFAULT: memref.view {{.*}} to memref<4x4x64x64xbf16
// DEFAULT: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 256, k = 16>
// TOO-BIG: error: wgmma tiling needs 197632 bytes of shared memory; at most 101376
// BAD-TILE: error: wgmma tiling needs a tile N of 64, 128 or 256 and 3 or more stages, got 192 and 4
// MMA-LABEL: func @bf16
// MMA-NOT: nvvm.wgmma
// MMA: nvvm.mma.sync
func.func @bf16(%a: memref<300x72xbf16>, %b: memref<72x264xbf16>, %c: memref<300x264xf32>) {
  linalg.matmul ins(%a, %b : memref<300x72xbf16>, memref<72x264xbf16>) outs(%c : memref<300x264xf32>)
  return
}

// f16, batched: the batch is the launch's z; copies index it first.
// CHECK-LABEL: func @f16_batched
// CHECK: gpu.launch blocks({{[^)]*}}) in (%{{[a-z0-9]+}} = %c2{{[_0-9]*}}, %{{[a-z0-9]+}} = %c2{{[_0-9]*}}, %{{[a-z0-9]+}} = %c2{{[_0-9]*}})
// CHECK: nvgpu.device_async_copy %arg0[%{{.*}}, %{{.*}}, %{{.*}}]
// CHECK: nvvm.wgmma.mma_async {{.*}}A[<f16>
func.func @f16_batched(%a: memref<2x130x40xf16>, %b: memref<2x40x136xf16>, %c: memref<2x130x136xf32>) {
  linalg.batch_matmul ins(%a, %b : memref<2x130x40xf16>, memref<2x40x136xf16>) outs(%c : memref<2x130x136xf32>)
  return
}

// f32 stays off wgmma (tf32 takes mma.sync when asked).
// CHECK-LABEL: func @f32
// CHECK-NOT: nvvm.wgmma
// CHECK: return
func.func @f32(%a: memref<256x64xf32>, %b: memref<64x128xf32>, %c: memref<256x128xf32>) {
  linalg.matmul ins(%a, %b : memref<256x64xf32>, memref<64x128xf32>) outs(%c : memref<256x128xf32>)
  return
}

// A zero fill before folds into the stores (C = the tile); bias + relu run
// on the accumulators and store the epilogue's output.
// CHECK-LABEL: func @bias_relu
// CHECK-NOT: linalg.fill
// CHECK: nvvm.wgmma.mma_async
// CHECK: scf.if
// CHECK-NOT: vector.load %{{.*}} : memref<256x128xf32>
// CHECK: memref.load %arg2
// CHECK: arith.addf
// CHECK: arith.maximumf
// CHECK: memref.store {{.*}}, %arg3
// CHECK-NOT: linalg.generic
func.func @bias_relu(%a: memref<256x64xbf16>, %b: memref<64x128xbf16>, %bias: memref<128xf32>,
                     %out: memref<256x128xf32>) {
  %c = memref.alloc() : memref<256x128xf32>
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<256x128xf32>)
  linalg.matmul ins(%a, %b : memref<256x64xbf16>, memref<64x128xbf16>) outs(%c : memref<256x128xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>,
                                   affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%c, %bias : memref<256x128xf32>, memref<128xf32>) outs(%out : memref<256x128xf32>) {
  ^bb0(%v: f32, %bv: f32, %o: f32):
    %s = arith.addf %v, %bv : f32
    %z = arith.constant 0.0 : f32
    %r = arith.maximumf %s, %z : f32
    linalg.yield %r : f32
  }
  memref.dealloc %c : memref<256x128xf32>
  return
}
