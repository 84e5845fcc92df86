// RUN: kiln-opt %s --kiln-cuda-tile-matmul="tensor-cores=1 mma-tile-n=128 mma-stages=3 mma-step-bytes=64" | FileCheck %s
// RUN: kiln-opt %s --kiln-cuda-tile-matmul="tensor-cores=1 tf32=1 mma-tile-n=128 mma-stages=2 mma-step-bytes=64" | FileCheck %s --check-prefix=TF32
// RUN: kiln-opt %s --kiln-cuda-tile-matmul="tensor-cores=1 mma-tile-n=256 mma-stages=2 mma-step-bytes=64" | FileCheck %s --check-prefix=WIDE
// RUN: not kiln-opt %s --kiln-cuda-tile-matmul="tensor-cores=1 mma-tile-n=256 mma-stages=3 mma-step-bytes=64 max-shared-bytes=49152" 2>&1 | FileCheck %s --check-prefix=TOO-BIG
// RUN: kiln-opt %s --kiln-cuda-tile-matmul="tensor-cores=1 mma-tile-n=128 mma-stages=3 mma-step-bytes=128 max-shared-bytes=232448" | FileCheck %s --check-prefix=DEEP
// The defaults are CudaMmaMatmulTunables' (CUDA/MatmulTunables.h): 128x256 outputs, 2 stages of 128 bytes.
// RUN: kiln-opt %s --kiln-cuda-tile-matmul="tensor-cores=1" | FileCheck %s --check-prefix=DEFAULT

// bf16 300x72 * 72x264: 3x3 blocks of 128x128 outputs, 256 threads, three
// swizzled stages (48 KiB), two steps of K issued before the loop, K in 3
// steps of 32 (the last partial: its copies past K read nothing), per step
// 2 x (4 A + 2 transposed B) ldmatrix.x4 feeding 2 x 16 mma.sync m16n8k16,
// C += the fragments two columns at a time inside the matrix.
// CHECK-LABEL: func @bf16
// CHECK: gpu.launch blocks({{[^)]*}}) in (%{{[a-z0-9]+}} = %c3{{[_0-9]*}}, %{{[a-z0-9]+}} = %c3{{[_0-9]*}}, %{{[a-z0-9]+}} = %c1{{[_0-9]*}})
// CHECK-SAME: threads({{[^)]*}}) in (%{{[a-z0-9]+}} = %c256
// CHECK-SAME: dynamic_shared_memory_size %c49152_i32
// CHECK: %[[SHARED:.*]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// CHECK: %[[AS:.*]] = memref.view %[[SHARED]][%{{.*}}][] : {{.*}} to memref<3x128x32xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[BS:.*]] = memref.view %[[SHARED]][%{{.*}}][] : {{.*}} to memref<3x32x128xbf16, #gpu.address_space<workgroup>>
// CHECK-COUNT-4: nvgpu.device_async_copy {{.*}} {bypassL1}
// CHECK: nvgpu.device_async_create_group
// CHECK-COUNT-4: nvgpu.device_async_copy
// CHECK: %[[GROUP:.*]] = nvgpu.device_async_create_group
// CHECK: scf.for %{{.*}} = %{{.*}} to %c3{{[_0-9]*}} step %c1{{[_0-9]*}} iter_args({{.*}}) -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>)
// CHECK-NEXT: nvgpu.device_async_wait %[[GROUP]] {numGroups = 1 : i32}
// CHECK-NEXT: gpu.barrier
// CHECK-COUNT-4: nvgpu.device_async_copy
// CHECK: nvgpu.device_async_create_group
// CHECK-COUNT-4: nvgpu.ldmatrix %[[AS]]{{.*}} {numTiles = 4 : i32, transpose = false}
// CHECK-COUNT-2: nvgpu.ldmatrix %[[BS]]{{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK-COUNT-16: nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<bf16>{{.*}}shape = #nvvm.shape<m = 16, n = 8, k = 16>
// CHECK-COUNT-4: nvgpu.ldmatrix %[[AS]]
// CHECK-COUNT-2: nvgpu.ldmatrix %[[BS]]
// CHECK-COUNT-16: nvvm.mma.sync
// CHECK: scf.yield
// CHECK: nvgpu.device_async_wait %[[GROUP]] {numGroups = 0 : i32}
// CHECK: scf.if
// CHECK: vector.load %arg2{{.*}} : memref<300x264xf32>, vector<2xf32>
// CHECK: arith.addf
// CHECK: vector.store {{.*}}, %arg2
// CHECK-NOT: linalg.matmul
// WIDE-LABEL: func @bf16
// WIDE: memref.view {{.*}} to memref<2x128x32xbf16
// WIDE: memref.view {{.*}} to memref<2x32x256xbf16
// TOO-BIG: error: tensor-core tiling needs 73728 bytes of shared memory; at most 49152
// Steps of 128 bytes (64 bf16 of K), 3 stages: 96 KiB, past the default
// 48 KiB (the pipeline passes the device's opt-in limit).
// DEEP-LABEL: func @bf16
// DEEP: dynamic_shared_memory_size %c98304_i32
// DEEP: memref.view {{.*}} to memref<3x128x64xbf16
// DEEP: memref.view {{.*}} to memref<3x64x128xbf16
// DEEP-COUNT-4: nvgpu.device_async_copy %arg0
func.func @bf16(%a: memref<300x72xbf16>, %b: memref<72x264xbf16>, %c: memref<300x264xf32>) {
  linalg.matmul ins(%a, %b : memref<300x72xbf16>, memref<72x264xbf16>) outs(%c : memref<300x264xf32>)
  return
}

// f16 batches: the batch is the grid's z; mma.sync takes f16 pairs.
// CHECK-LABEL: func @f16_batched
// CHECK: gpu.launch blocks({{[^)]*}}) in ({{.*}}, %{{[a-z0-9]+}} = %c2{{[_0-9]*}})
// CHECK: nvgpu.device_async_copy %arg0[%{{[a-z0-9]+}}, %{{[a-z0-9]+}}, %{{[a-z0-9]+}}]
// CHECK: nvvm.mma.sync {{.*}} : (vector<2xf16>, vector<2xf16>, f32)
func.func @f16_batched(%a: memref<2x130x40xf16>, %b: memref<2x40x136xf16>, %c: memref<2x130x136xf32>) {
  linalg.batch_matmul ins(%a, %b : memref<2x130x40xf16>, memref<2x40x136xf16>) outs(%c : memref<2x130x136xf32>)
  return
}

// N not a multiple of 8 (rows of B not 16-byte copies): still the tensor
// cores, B loaded element by element (zero past N) and stored to shared
// memory after the math; an odd N stores C one element at a time.
// CHECK-LABEL: func @odd_columns
// CHECK-COUNT-2: nvgpu.device_async_copy %arg0
// CHECK-NOT: nvgpu.device_async_copy
// CHECK: memref.load %arg1
// CHECK: scf.for
// CHECK: nvvm.mma.sync
// CHECK: vector.store {{.*}} : memref<3x32x128xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// CHECK: scf.yield
// CHECK: vector.load %arg2{{.*}} : memref<16x13xf32>, vector<1xf32>
// CHECK-NOT: memref<8x128xf32, #gpu.address_space<workgroup>>
func.func @odd_columns(%a: memref<16x16xbf16>, %b: memref<16x13xbf16>, %c: memref<16x13xf32>) {
  linalg.matmul ins(%a, %b : memref<16x16xbf16>, memref<16x13xbf16>) outs(%c : memref<16x13xf32>)
  return
}

// A K that is not whole 16-byte copies of A's rows: the SIMT kernel.
// CHECK-LABEL: func @odd_depth
// CHECK: memref<2x16x128xf32, #gpu.address_space<workgroup>>
// CHECK-NOT: nvvm.mma.sync
func.func @odd_depth(%a: memref<16x12xbf16>, %b: memref<12x16xbf16>, %c: memref<16x16xf32>) {
  linalg.matmul ins(%a, %b : memref<16x12xbf16>, memref<12x16xbf16>) outs(%c : memref<16x16xf32>)
  return
}

// f32 stays on the SIMT kernel unless tf32 is asked for; then mma.sync
// m16n8k8 with 16 floats of K per step, B fragments loaded one by one.
// CHECK-LABEL: func @f32
// CHECK: memref<2x16x128xf32, #gpu.address_space<workgroup>>
// CHECK-NOT: nvvm.mma.sync
// TF32-LABEL: func @f32
// TF32: memref.view {{.*}} to memref<2x128x16xf32, #gpu.address_space<workgroup>>
// TF32: %[[BS:.*]] = memref.view {{.*}} to memref<2x16x128xf32, #gpu.address_space<workgroup>>
// TF32: nvgpu.device_async_copy {{.*}}, 4, %{{.*}} {bypassL1}
// TF32: nvgpu.ldmatrix {{.*}} -> vector<4x1xf32>
// TF32: memref.load %[[BS]]
// TF32: arith.bitcast %{{.*}} : f32 to i32
// TF32: nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<tf32>{{.*}}shape = #nvvm.shape<m = 16, n = 8, k = 8>
func.func @f32(%a: memref<256x64xf32>, %b: memref<64x128xf32>, %c: memref<256x128xf32>) {
  linalg.matmul ins(%a, %b : memref<256x64xf32>, memref<64x128xf32>) outs(%c : memref<256x128xf32>)
  return
}

// C filled with zeros just before: the kernel stores the tile instead of
// adding it to C, and the fill goes.
// CHECK-LABEL: func @zero_filled
// CHECK-NOT: linalg.fill
// CHECK: gpu.launch
// CHECK: arith.minui
// CHECK-NOT: vector.load %arg2
// CHECK: vector.store {{.*}}, %arg2
func.func @zero_filled(%a: memref<256x64xbf16>, %b: memref<64x128xbf16>, %c: memref<256x128xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<256x128xf32>)
  linalg.matmul ins(%a, %b : memref<256x64xbf16>, memref<64x128xbf16>) outs(%c : memref<256x128xf32>)
  return
}

// A bias + relu consumer of C runs on the fragments: C is neither filled
// nor stored, and the generic is gone.
// CHECK-LABEL: func @bias_relu
// CHECK-NOT: linalg.fill
// CHECK: gpu.launch
// CHECK: nvvm.mma.sync
// CHECK: scf.if
// CHECK-NOT: vector.store
// CHECK: vector.load %arg2{{.*}} : memref<128xf32>, vector<2xf32>
// CHECK: arith.addf {{.*}} : vector<2xf32>
// CHECK: arith.maximumf {{.*}} : vector<2xf32>
// CHECK: vector.store %{{.*}}, %arg3{{.*}} {alignment = 8 : i64} : memref<256x128xf32>, vector<2xf32>
// CHECK: vector.load %arg2
// CHECK: vector.store %{{.*}}, %arg3
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

// DEFAULT-LABEL: func @bf16
// DEFAULT: dynamic_shared_memory_size %c98304_i32
// DEFAULT: memref.view {{.*}} to memref<2x128x64xbf16
// DEFAULT: memref.view {{.*}} to memref<2x64x256xbf16
