// RUN: kiln-opt %s --kiln-cuda-tile-matmul="tensor-cores=1 wgmma=1 wgmma-tile-n=128 wgmma-stages=3" | FileCheck %s
// RUN: kiln-opt %s --kiln-cuda-tile-matmul="tensor-cores=1 wgmma=1" | FileCheck %s --check-prefix=DEFAULT
// RUN: not kiln-opt %s --kiln-cuda-tile-matmul="tensor-cores=1 wgmma=1 wgmma-tile-n=256 wgmma-stages=4 max-shared-bytes=101376" 2>&1 | FileCheck %s --check-prefix=TOO-BIG
// RUN: not kiln-opt %s --kiln-cuda-tile-matmul="tensor-cores=1 wgmma=1 wgmma-tile-n=192" 2>&1 | FileCheck %s --check-prefix=BAD-TILE
// Without wgmma (sm_80, or KILN_CUDA_WGMMA=0) the same matmul takes mma.sync.
// RUN: kiln-opt %s --kiln-cuda-tile-matmul="tensor-cores=1" | FileCheck %s --check-prefix=MMA
// RUN: kiln-opt %s --kiln-cuda-tile-matmul="tensor-cores=1 wgmma=1 tf32=1 wgmma-tile-n=128 wgmma-stages=3" | FileCheck %s --check-prefix=TF32

// bf16 300x72 * 72x264: tensor maps of A (boxes of 128 x 64) and B (64 x
// 64) made on the host and passed as pointers; 3x3 blocks of 128x128
// outputs, 384 threads (a producer and two consumer warpgroups), three
// stages of 128 x 64 A and 64 x 128 B (2 boxes of 64 columns) in
// 128-byte-swizzled shared memory aligned to 1024 bytes, then a `full` and
// an `empty` mbarrier per stage (3 x (32 KiB + 16) + 1 KiB). Thread 0
// initialises the barriers (full: 1 arrival, empty: 8 consumer warps).
// The producer warpgroup gives up registers; its thread 0 walks K in 2
// steps of 64 (the last partial: TMA reads zeros past K): waits for the
// stage to be empty, arms `full` with the stage's 32 KiB and issues one
// TMA copy of A and two of B. The consumers take registers, wait for
// `full`, issue 4 wgmma m64n128k16 (bf16, B transposed) on descriptors,
// commit, leave one group in flight and free the previous step's stage
// (lane 0 of each warp). C += the accumulators two columns at a time
// inside the matrix.
// CHECK-LABEL: func @bf16
// CHECK: %[[A:.*]] = memref.cast %arg0 : memref<300x72xbf16> to memref<*xbf16>
// CHECK: %[[AMAP:.*]] = nvgpu.tma.create.descriptor %[[A]] box[%c128{{[_0-9]*}}, %c64{{[_0-9]*}}] : memref<*xbf16> -> <tensor = memref<128x64xbf16, 3>, swizzle = swizzle_128b, l2promo = l2promo_256b, oob = zero, interleave = none>
// CHECK: %[[APTR:.*]] = builtin.unrealized_conversion_cast %[[AMAP]] : {{.*}} to !llvm.ptr
// CHECK: %[[B:.*]] = memref.cast %arg1
// CHECK: nvgpu.tma.create.descriptor %[[B]] box[%{{.*}}, %{{.*}}] : memref<*xbf16> -> <tensor = memref<64x64xbf16, 3>
// CHECK: %[[BPTR:.*]] = builtin.unrealized_conversion_cast
// CHECK: gpu.launch blocks({{[^)]*}}) in (%{{[a-z0-9]+}} = %c9{{[_0-9]*}}, %{{[a-z0-9]+}} = %c1{{[_0-9]*}}, %{{[a-z0-9]+}} = %c1{{[_0-9]*}})
// CHECK-SAME: threads({{[^)]*}}) in (%{{[a-z0-9]+}} = %c384
// CHECK-SAME: dynamic_shared_memory_size %c99376_i32
// CHECK: gpu.dynamic_shared_memory
// CHECK: scf.if
// CHECK: nvvm.mbarrier.init {{.*}}, %c1_i32{{[_0-9]*}} :
// CHECK: nvvm.mbarrier.init {{.*}}, %c8_i32{{[_0-9]*}} :
// CHECK: nvvm.mbarrier.init {{.*}}, %c1_i32{{[_0-9]*}} :
// CHECK: nvvm.mbarrier.init {{.*}}, %c8_i32{{[_0-9]*}} :
// CHECK: nvvm.mbarrier.init {{.*}}, %c1_i32{{[_0-9]*}} :
// CHECK: nvvm.mbarrier.init {{.*}}, %c8_i32{{[_0-9]*}} :
// CHECK-NOT: nvvm.mbarrier.init
// CHECK: nvvm.fence.mbarrier.init
// CHECK: gpu.barrier
// CHECK: scf.if
// CHECK-NEXT: nvvm.setmaxregister decrease 40
// CHECK: scf.for %{{.*}} = %{{.*}} to %c2{{[_0-9]*}} step
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.mbarrier.arrive.expect_tx %[[FULL:.*]], %c32768_i32
// CHECK: %[[TO:.*]] = llvm.addrspacecast %{{.*}} : !llvm.ptr<3> to !llvm.ptr<7>
// CHECK-NEXT: nvvm.cp.async.bulk.tensor.shared.cluster.global %[[TO]], %[[APTR]], %[[FULL]], box[
// CHECK-COUNT-2: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[BPTR]], %[[FULL]], box[
// CHECK: } else {
// CHECK-NEXT: nvvm.setmaxregister increase 232
// The descriptors' fixed bits: 128-byte swizzle, 8-row groups 1024 bytes
// apart; A's leading offset 16 bytes (unused), B's 8192 (a 64-column block).
// CHECK-DAG: arith.constant 4611686293305360384 : i64
// CHECK-DAG: arith.constant 4611686293338849280 : i64
// CHECK: scf.for %{{.*}} = %{{.*}} to %c2{{[_0-9]*}} step %c1{{[_0-9]*}} iter_args(%{{.*}} = %{{.*}}) -> (!llvm.struct<(f32, {{(f32, )+}}f32)>)
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-COUNT-4: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 128, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>]
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK: scf.if
// CHECK: nvvm.mbarrier.arrive
// CHECK: scf.yield
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: scf.if
// CHECK: vector.load %arg2{{.*}} : memref<300x264xf32>, vector<2xf32>
// CHECK: arith.addf
// CHECK: vector.store {{.*}}, %arg2
// CHECK-NOT: linalg.matmul
// The defaults (CudaWgmmaMatmulTunables): 128x256 outputs, 4 stages
// (4 x (48 KiB + 16) + 1 KiB), four boxes of B per stage, m64n256k16.
// DEFAULT-LABEL: func @bf16
// DEFAULT: dynamic_shared_memory_size %c197696_i32
// DEFAULT: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c49152_i32
// DEFAULT-COUNT-5: nvvm.cp.async.bulk.tensor.shared.cluster.global
// DEFAULT: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 256, k = 16>
// TOO-BIG: error: wgmma tiling needs 197696 bytes of shared memory; at most 101376
// BAD-TILE: error: wgmma tiling needs a tile N of 64, 128 or 256 and 3 or more stages, got 192 and 4
// MMA-LABEL: func @bf16
// MMA-NOT: nvvm.wgmma
// MMA: nvvm.mma.sync
func.func @bf16(%a: memref<300x72xbf16>, %b: memref<72x264xbf16>, %c: memref<300x264xf32>) {
  linalg.matmul ins(%a, %b : memref<300x72xbf16>, memref<72x264xbf16>) outs(%c : memref<300x264xf32>)
  return
}

// f16, batched: 2 batches of 2 x 2 tiles, a block each, tile t of batch
// t / 4; the maps have a batch dim of box 1, and the copies' last
// coordinate is the batch.
// CHECK-LABEL: func @f16_batched
// CHECK: nvgpu.tma.create.descriptor {{.*}} box[%c1{{[_0-9]*}}, %c128{{[_0-9]*}}, %c64{{[_0-9]*}}] : memref<*xf16> -> <tensor = memref<1x128x64xf16, 3>
// CHECK: gpu.launch blocks({{[^)]*}}) in (%{{[a-z0-9]+}} = %c8{{[_0-9]*}}, %{{[a-z0-9]+}} = %c1{{[_0-9]*}}, %{{[a-z0-9]+}} = %c1{{[_0-9]*}})
// CHECK: scf.for %[[T:.*]] = %{{.*}} to %c8{{[_0-9]*}} step
// CHECK: %[[BATCH:.*]] = arith.divui %[[T]], %c4
// CHECK: %[[Z:.*]] = arith.index_castui %[[BATCH]] : index to i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}} box[%{{.*}}, %{{.*}}, %[[Z]]]
// CHECK: nvvm.wgmma.mma_async {{.*}}A[<f16>
func.func @f16_batched(%a: memref<2x130x40xf16>, %b: memref<2x40x136xf16>, %c: memref<2x130x136xf32>) {
  linalg.batch_matmul ins(%a, %b : memref<2x130x40xf16>, memref<2x40x136xf16>) outs(%c : memref<2x130x136xf32>)
  return
}

// f32 stays off wgmma unless tf32 is asked for. wgmma reads a tf32 B
// K-major only: B is first copied transposed (32 x 32 tiles through padded
// workgroup memory, 32 x 8 threads) into a new 128 x 64 buffer, whose
// tensor map's box is a tile of 128 rows x 32 K (128 bytes); the wgmma
// reads it K-major (col), 8 K at a time, 4 per 32-element K step.
// CHECK-LABEL: func @f32
// CHECK-NOT: nvvm.wgmma
// CHECK: return
// TF32-LABEL: func @f32
// TF32: nvgpu.tma.create.descriptor {{.*}} -> <tensor = memref<128x32xf32, 3>
// TF32: %[[COPY:.*]] = memref.alloc() : memref<128x64xf32>
// TF32: gpu.launch {{.*}} threads({{.*}}) in ({{.*}} = %c32{{.*}}, {{.*}} = %c8{{.*}}) workgroup(%[[TILE:.*]] : memref<32x33xf32, #gpu.address_space<workgroup>>)
// TF32: memref.load %arg1
// TF32: memref.store {{.*}}, %[[TILE]]
// TF32: gpu.barrier
// TF32: memref.load %[[TILE]]
// TF32: memref.store {{.*}}, %[[COPY]]
// TF32: %[[CAST:.*]] = memref.cast %[[COPY]]
// TF32: nvgpu.tma.create.descriptor %[[CAST]] {{.*}} -> <tensor = memref<128x32xf32, 3>
// TF32: threads({{.*}}) in ({{.*}} = %c384
// TF32-COUNT-4: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 8>, D[<f32>, <one>], A[<tf32>, <one>, <row>], B[<tf32>, <one>, <col>]
// TF32-NOT: nvvm.wgmma.mma_async
// TF32: return
func.func @f32(%a: memref<256x64xf32>, %b: memref<64x128xf32>, %c: memref<256x128xf32>) {
  linalg.matmul ins(%a, %b : memref<256x64xf32>, memref<64x128xf32>) outs(%c : memref<256x128xf32>)
  return
}

// A zero fill before folds into the stores (C = the tile); bias + relu run
// on the accumulators, two columns at a time, and store the epilogue's
// output (rows even: 8-byte stores).
// CHECK-LABEL: func @bias_relu
// CHECK-NOT: linalg.fill
// CHECK: nvvm.wgmma.mma_async
// CHECK: scf.if
// CHECK-NOT: vector.load %{{.*}} : memref<256x128xf32>
// CHECK: vector.load %arg2{{.*}} : memref<128xf32>, vector<2xf32>
// CHECK: arith.addf {{.*}} : vector<2xf32>
// CHECK: arith.maximumf {{.*}} : vector<2xf32>
// CHECK: vector.store {{.*}}, %arg3{{.*}} {alignment = 8 : i64} : memref<256x128xf32>, vector<2xf32>
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

// Run-time sizes: the same kernel, its tile counts, K steps and matrix
// sizes computed on the host (tensor maps of the whole buffers, which the
// runtime sizes at launch). TMA needs rows of whole 16-byte units, so K and
// N must be multiples of 8 (and K not 0) at run time: the host computes a
// misfit count, the wgmma kernel launches where it is 0 and the SIMT
// kernel, built beside it, where it is not (a grid of no blocks otherwise).
// The zero fill folds into both kernels' stores.
// CHECK-LABEL: func @dynamic
// CHECK-NOT: linalg.fill
// CHECK-DAG: %[[K:.*]] = memref.dim %arg0, %c1
// CHECK-DAG: %[[N:.*]] = memref.dim %arg1, %c1
// CHECK-DAG: arith.remsi %[[K]], %c8
// CHECK-DAG: arith.remsi %[[N]], %c8
// CHECK: %[[NOK:.*]] = arith.cmpi sle, %[[K]], %c0
// CHECK: %[[ONE:.*]] = arith.select %[[NOK]]
// CHECK: %[[MISFIT:.*]] = arith.addi %{{.*}}, %[[ONE]]
// CHECK: %[[FITS:.*]] = arith.cmpi eq, %[[MISFIT]], %c0
// CHECK: %[[STEPS:.*]] = arith.ceildivsi %{{.*}}, %c64
// CHECK: nvgpu.tma.create.descriptor {{.*}} : memref<*xbf16> -> <tensor = memref<128x64xbf16, 3>
// CHECK: %[[ROWTILES:.*]] = arith.ceildivsi %{{.*}}, %c128
// CHECK: %[[COLTILES:.*]] = arith.ceildivsi %{{.*}}, %c128
// CHECK: %[[TILES:.*]] = arith.muli %[[ROWTILES]], %[[COLTILES]]
// CHECK: %[[WGMMA:.*]] = arith.select %[[FITS]], %[[TILES]], %c0
// CHECK: gpu.launch blocks({{[^)]*}}) in (%{{[a-z0-9]+}} = %[[WGMMA]], %{{[a-z0-9]+}} = %c1
// CHECK-SAME: threads({{[^)]*}}) in (%{{[a-z0-9]+}} = %c384
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[STEPS]] step
// CHECK: nvvm.wgmma.mma_async
// C's rows of run-time length are even where it launches: its pairs are
// aligned stores (not split into elements).
// CHECK: vector.store %{{.*}} {alignment = 8 : i64} : memref<?x?xf32>, vector<2xf32>
// CHECK: gpu.terminator
// CHECK: %[[UNMET:.*]] = arith.select %[[FITS]], %c1{{[_0-9]*}}, %c0
// CHECK: %[[MISFITS:.*]] = arith.cmpi eq, %[[UNMET]], %c0
// CHECK: %[[SIMT:.*]] = arith.select %[[MISFITS]], %{{.*}}, %c0
// CHECK: gpu.launch blocks({{[^)]*}}) in (%{{[a-z0-9]+}} = %[[SIMT]],
// CHECK-SAME: threads({{[^)]*}}) in (%{{[a-z0-9]+}} = %c256
// CHECK-NOT: linalg.matmul
// CHECK: return
func.func @dynamic(%a: memref<?x?xbf16>, %b: memref<?x?xbf16>, %c: memref<?x?xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<?x?xf32>)
  linalg.matmul ins(%a, %b : memref<?x?xbf16>, memref<?x?xbf16>) outs(%c : memref<?x?xf32>)
  return
}

// Only M at run time: K and N suit TMA at compile time, so no SIMT kernel.
// CHECK-LABEL: func @dynamic_rows
// CHECK: gpu.launch
// CHECK-SAME: threads({{[^)]*}}) in (%{{[a-z0-9]+}} = %c384
// CHECK-NOT: gpu.launch
// CHECK: return
func.func @dynamic_rows(%a: memref<?x64xbf16>, %b: memref<64x128xbf16>, %c: memref<?x128xf32>) {
  linalg.matmul ins(%a, %b : memref<?x64xbf16>, memref<64x128xbf16>) outs(%c : memref<?x128xf32>)
  return
}

// An f32 matmul of two f8 matrices (kiln-to-linalg's marked decodes right
// before it) reads the f8 bytes: A's tensor map boxes 128 rows x 128 K
// (128 bytes), B is copied transposed (bytes) and read K-major like A, one
// wgmma m64n128k32 per 32 K (4 per step) with each operand's own f8 type.
// The tensor cores keep about 14 bits of an f8 wgmma's sums: each step's
// start from zero (scale-d 0), and once done (wait 0) the consumer adds
// them to the f32 accumulator. The decodes and their f32 buffers are gone.
// CHECK-LABEL: func @f8
// CHECK: nvgpu.tma.create.descriptor {{.*}} : memref<*xi8> -> <tensor = memref<128x128xi8, 3>
// CHECK: %[[COPY:.*]] = memref.alloc() : memref<256x128xi8>
// CHECK: memref.load %arg1
// CHECK: memref.store {{.*}}, %[[COPY]]
// CHECK: nvgpu.tma.create.descriptor {{.*}} : memref<*xi8> -> <tensor = memref<128x128xi8, 3>
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 32>, D[<f32>, <zero>], A[<e4m3>, <one>, <row>], B[<e5m2>, <one>, <col>]
// CHECK-COUNT-3: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 32>, D[<f32>, <one>], A[<e4m3>, <one>, <row>], B[<e5m2>, <one>, <col>]
// CHECK-NOT: nvvm.wgmma.mma_async
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-COUNT-64: arith.addf
// Tiles 256 wide (the default) are 128 wide for f8 (two accumulators).
// DEFAULT-LABEL: func @f8
// DEFAULT: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 32>, D[<f32>, <zero>]
// CHECK-NOT: linalg.generic
// CHECK-NOT: memref.alloc() : memref<{{.*}}xf32>
// CHECK: return
#identity = affine_map<(d0, d1) -> (d0, d1)>
func.func @f8(%a: memref<256x128xi8>, %b: memref<128x256xi8>, %c: memref<256x256xf32>) {
  %da = memref.alloc() : memref<256x128xf32>
  // The bodies stand in for the decodes; the mark says what they decode.
  linalg.generic {indexing_maps = [#identity, #identity], iterator_types = ["parallel", "parallel"],
                  kiln.f8_decode = f8E4M3FN}
      ins(%a : memref<256x128xi8>) outs(%da : memref<256x128xf32>) {
  ^bb0(%in: i8, %out: f32):
    %f = arith.sitofp %in : i8 to f32
    linalg.yield %f : f32
  }
  %db = memref.alloc() : memref<128x256xf32>
  linalg.generic {indexing_maps = [#identity, #identity], iterator_types = ["parallel", "parallel"],
                  kiln.f8_decode = f8E5M2}
      ins(%b : memref<128x256xi8>) outs(%db : memref<128x256xf32>) {
  ^bb0(%in: i8, %out: f32):
    %f = arith.sitofp %in : i8 to f32
    linalg.yield %f : f32
  }
  linalg.matmul ins(%da, %db : memref<256x128xf32>, memref<128x256xf32>) outs(%c : memref<256x256xf32>)
  memref.dealloc %da : memref<256x128xf32>
  memref.dealloc %db : memref<128x256xf32>
  return
}

// Where something writes memory between a decode and the matmul (here A's
// f8 bytes), or K is no multiple of 16, the decodes run and the matmul
// multiplies f32 on the SIMT kernel.
// CHECK-LABEL: func @f8_overwritten
// CHECK: linalg.generic
// CHECK: memref.copy
// CHECK: linalg.generic
// CHECK-NOT: nvvm.wgmma
// CHECK: return
func.func @f8_overwritten(%a: memref<256x128xi8>, %b: memref<128x256xi8>, %a2: memref<256x128xi8>,
                          %c: memref<256x256xf32>) {
  %da = memref.alloc() : memref<256x128xf32>
  linalg.generic {indexing_maps = [#identity, #identity], iterator_types = ["parallel", "parallel"],
                  kiln.f8_decode = f8E4M3FN}
      ins(%a : memref<256x128xi8>) outs(%da : memref<256x128xf32>) {
  ^bb0(%in: i8, %out: f32):
    %f = arith.sitofp %in : i8 to f32
    linalg.yield %f : f32
  }
  memref.copy %a2, %a : memref<256x128xi8> to memref<256x128xi8>
  %db = memref.alloc() : memref<128x256xf32>
  linalg.generic {indexing_maps = [#identity, #identity], iterator_types = ["parallel", "parallel"],
                  kiln.f8_decode = f8E4M3FN}
      ins(%b : memref<128x256xi8>) outs(%db : memref<128x256xf32>) {
  ^bb0(%in: i8, %out: f32):
    %f = arith.sitofp %in : i8 to f32
    linalg.yield %f : f32
  }
  linalg.matmul ins(%da, %db : memref<256x128xf32>, memref<128x256xf32>) outs(%c : memref<256x256xf32>)
  return
}

// CHECK-LABEL: func @f8_short_k
// CHECK: linalg.generic
// CHECK: linalg.generic
// CHECK-NOT: nvvm.wgmma
// CHECK: return
func.func @f8_short_k(%a: memref<256x24xi8>, %b: memref<24x256xi8>, %c: memref<256x256xf32>) {
  %da = memref.alloc() : memref<256x24xf32>
  linalg.generic {indexing_maps = [#identity, #identity], iterator_types = ["parallel", "parallel"],
                  kiln.f8_decode = f8E4M3FN}
      ins(%a : memref<256x24xi8>) outs(%da : memref<256x24xf32>) {
  ^bb0(%in: i8, %out: f32):
    %f = arith.sitofp %in : i8 to f32
    linalg.yield %f : f32
  }
  %db = memref.alloc() : memref<24x256xf32>
  linalg.generic {indexing_maps = [#identity, #identity], iterator_types = ["parallel", "parallel"],
                  kiln.f8_decode = f8E4M3FN}
      ins(%b : memref<24x256xi8>) outs(%db : memref<24x256xf32>) {
  ^bb0(%in: i8, %out: f32):
    %f = arith.sitofp %in : i8 to f32
    linalg.yield %f : f32
  }
  linalg.matmul ins(%da, %db : memref<256x24xf32>, memref<24x256xf32>) outs(%c : memref<256x256xf32>)
  return
}

// x @ W^T: B is a copy of W (N x K) transposed, which the kernel reads from
// W itself, K-major (a box of 128 rows x 64 K, like A's; wgmma B `col`): the
// copy and its buffer are gone, as is tf32's own transposed copy.
// CHECK-LABEL: func @bf16_weights
// CHECK-NOT: linalg.generic
// CHECK: %[[W:.*]] = memref.cast %arg1 : memref<128x64xbf16> to memref<*xbf16>
// CHECK: nvgpu.tma.create.descriptor %[[W]] box[%c128{{[_0-9]*}}, %c64{{[_0-9]*}}] : memref<*xbf16> -> <tensor = memref<128x64xbf16, 3>
// CHECK-COUNT-4: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK-NOT: memref.alloc
// CHECK: return
// TF32-LABEL: func @f32_weights
// TF32-NOT: memref.alloc
// TF32: %[[W:.*]] = memref.cast %arg1 : memref<128x64xf32> to memref<*xf32>
// TF32: nvgpu.tma.create.descriptor %[[W]] {{.*}} -> <tensor = memref<128x32xf32, 3>
// TF32-COUNT-4: nvvm.wgmma.mma_async {{.*}} B[<tf32>, <one>, <col>]
// TF32-NOT: memref.alloc
// TF32: return
#swap = affine_map<(d0, d1) -> (d1, d0)>
func.func @bf16_weights(%a: memref<256x64xbf16>, %w: memref<128x64xbf16>, %c: memref<256x128xf32>) {
  %wt = memref.alloc() : memref<64x128xbf16>
  linalg.generic {indexing_maps = [#swap, #identity], iterator_types = ["parallel", "parallel"]}
      ins(%w : memref<128x64xbf16>) outs(%wt : memref<64x128xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    linalg.yield %in : bf16
  }
  linalg.matmul ins(%a, %wt : memref<256x64xbf16>, memref<64x128xbf16>) outs(%c : memref<256x128xf32>)
  memref.dealloc %wt : memref<64x128xbf16>
  return
}
func.func @f32_weights(%a: memref<256x64xf32>, %w: memref<128x64xf32>, %c: memref<256x128xf32>) {
  %wt = memref.alloc() : memref<64x128xf32>
  linalg.generic {indexing_maps = [#swap, #identity], iterator_types = ["parallel", "parallel"]}
      ins(%w : memref<128x64xf32>) outs(%wt : memref<64x128xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.matmul ins(%a, %wt : memref<256x64xf32>, memref<64x128xf32>) outs(%c : memref<256x128xf32>)
  memref.dealloc %wt : memref<64x128xf32>
  return
}

// A scale read at constant indices (_scaled_mm's) is loaded once, before
// the consumers' tiles (among the stores, each element would load it
// again), and the scaled bf16 pairs go out as 4-byte stores.
// CHECK-LABEL: func @scaled
// CHECK: nvvm.setmaxregister increase
// CHECK: %[[SCALE:.*]] = memref.load %arg2[] : memref<f32>
// CHECK-NOT: memref.load %arg2
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NOT: memref.load %arg2
// CHECK: %[[SPLAT:.*]] = vector.broadcast %[[SCALE]] : f32 to vector<2xf32>
// CHECK: arith.mulf {{.*}}, %[[SPLAT]] : vector<2xf32>
// CHECK: vector.store {{.*}}, %arg3{{.*}} {alignment = 4 : i64} : memref<256x128xbf16>, vector<2xbf16>
// CHECK-NOT: memref.load %arg2
// CHECK: return
#scalar = affine_map<(d0, d1) -> ()>
func.func @scaled(%a: memref<256x64xbf16>, %b: memref<64x128xbf16>, %s: memref<f32>,
                  %out: memref<256x128xbf16>) {
  %c = memref.alloc() : memref<256x128xf32>
  linalg.matmul ins(%a, %b : memref<256x64xbf16>, memref<64x128xbf16>) outs(%c : memref<256x128xf32>)
  linalg.generic {indexing_maps = [#identity, #scalar, #identity], iterator_types = ["parallel", "parallel"]}
      ins(%c, %s : memref<256x128xf32>, memref<f32>) outs(%out : memref<256x128xbf16>) {
  ^bb0(%x: f32, %scale: f32, %o: bf16):
    %m = arith.mulf %x, %scale : f32
    %t = arith.truncf %m : f32 to bf16
    linalg.yield %t : bf16
  }
  memref.dealloc %c : memref<256x128xf32>
  return
}

// An epilogue writing into a view at an odd offset (a concat's slice)
// stores its pairs without an alignment the view does not have (C's
// own loads are aligned).
// CHECK-LABEL: func @scaled_into_view
// CHECK: vector.store {{.*}}, %arg3[{{.*}}] : memref<256x128xf32, strided<[129, 1], offset: 1>>, vector<2xf32>
// CHECK-NOT: %arg3[{{.*}}] {alignment
// CHECK: return
func.func @scaled_into_view(%a: memref<256x64xbf16>, %b: memref<64x128xbf16>, %s: memref<f32>,
                            %out: memref<256x128xf32, strided<[129, 1], offset: 1>>) {
  %c = memref.alloc() : memref<256x128xf32>
  linalg.matmul ins(%a, %b : memref<256x64xbf16>, memref<64x128xbf16>) outs(%c : memref<256x128xf32>)
  linalg.generic {indexing_maps = [#identity, #scalar, #identity], iterator_types = ["parallel", "parallel"]}
      ins(%c, %s : memref<256x128xf32>, memref<f32>)
      outs(%out : memref<256x128xf32, strided<[129, 1], offset: 1>>) {
  ^bb0(%x: f32, %scale: f32, %o: f32):
    %m = arith.mulf %x, %scale : f32
    linalg.yield %m : f32
  }
  memref.dealloc %c : memref<256x128xf32>
  return
}
