// RUN: kiln-opt %s --kiln-cuda-wgmma-attention --split-input-file | FileCheck %s

// bf16, head dim 128, causal, odd lengths: one launch of three warpgroups
// per 128 query rows of each batch entry (2 x 2 blocks); tensor maps of Q,
// K and V with 128 x 64 boxes (128-byte swizzle) made on the host; the
// producer arms Q's barrier and copies Q's two boxes, then per key tile
// waits for the stage to be free, arms its barrier with K's and V's bytes
// and copies their four boxes; a consumer waits for the stage, issues S =
// Q K^T (wgmma from shared memory, both K-major), waits for it (and the
// P V before), gives the stage before back, runs the softmax (causal test
// only where needed, exponentials by ex2), rounds P to bf16 and issues O
// += P V (wgmma with P in registers: inline PTX, B transposed); O / sum
// stored as bf16 pairs; the unused f32 scratch is freed.
// CHECK-LABEL: func.func @causal_bf16
// CHECK-NOT: kiln_kernel.attention
// CHECK-NOT: memref.alloc
// CHECK-COUNT-3: nvgpu.tma.create.descriptor {{.*}} box[%{{.*}}, %c128{{.*}}, %c64{{.*}}] : memref<*xbf16> -> <tensor = memref<1x128x64xbf16, 3>, swizzle = swizzle_128b
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c4{{.*}}, {{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}}) threads({{.*}}) in ({{.*}} = %c384
// CHECK-SAME: dynamic_shared_memory_size %c164904_i32
// CHECK-COUNT-5: nvvm.mbarrier.init
// CHECK: nvvm.setmaxregister  decrease 24
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c32768_i32
// CHECK-COUNT-2: nvvm.cp.async.bulk.tensor.shared.cluster.global
// CHECK: scf.for
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c65536_i32
// CHECK-COUNT-4: nvvm.cp.async.bulk.tensor.shared.cluster.global
// CHECK: nvvm.setmaxregister  increase 240
// CHECK: scf.for
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-COUNT-8: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>, D[<f32>, <{{zero|one}}>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: nvvm.mbarrier.arrive
// CHECK: arith.cmpi ule
// CHECK: } else {
// CHECK-NOT: arith.cmpi
// CHECK: scf.yield
// CHECK: gpu.shuffle xor
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK: arith.truncf {{.*}} : vector<2xf32> to vector<2xbf16>
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-COUNT-8: llvm.inline_asm has_side_effects {{.*}}wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 1;
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: scf.yield
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: vector.store {{.*}} : memref<2x200x128xbf16>, vector<2xbf16>
func.func @causal_bf16(%q: memref<2x200x128xbf16>, %k: memref<2x77x128xbf16>, %v: memref<2x77x128xbf16>,
                       %out: memref<2x200x128xbf16>) {
  %acc = memref.alloc() : memref<2x200x128xf32>
  kiln_kernel.attention ins(%q, %k, %v : memref<2x200x128xbf16>, memref<2x77x128xbf16>, memref<2x77x128xbf16>)
      outs(%out, %acc : memref<2x200x128xbf16>, memref<2x200x128xf32>) {causal, scale = 0.088 : f64}
  return
}

// -----

// f16, head dim 64 with a mask: S is m64n128 over 4 wgmmas of K 16, P V
// m64n64 (32 accumulators per thread); the mask is read per element.
// CHECK-LABEL: func.func @masked_f16
// CHECK: gpu.launch
// CHECK-COUNT-4: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>, D[<f32>, <{{zero|one}}>], A[<f16>
// CHECK-NOT: nvvm.wgmma.mma_async
// CHECK: memref.load {{.*}} : memref<1x130x96xf16>
// CHECK: llvm.inline_asm {{.*}}wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {$0, {{.*}}, $31}, {$64, $65, $66, $67}, $68, p, 1, 1, 1;
func.func @masked_f16(%q: memref<3x130x64xf16>, %k: memref<3x96x64xf16>, %m: memref<130x96xf16>,
                      %out: memref<3x130x64xf16>) {
  %acc = memref.alloc() : memref<3x130x64xf32>
  %mask = memref.expand_shape %m [[0, 1], [2]] output_shape [1, 130, 96] : memref<130x96xf16> into memref<1x130x96xf16>
  kiln_kernel.attention ins(%q, %k, %k mask %mask : memref<3x130x64xf16>, memref<3x96x64xf16>, memref<3x96x64xf16>, memref<1x130x96xf16>)
      outs(%out, %acc : memref<3x130x64xf16>, memref<3x130x64xf32>) {scale = 0.125 : f64}
  return
}

// -----

// f32, head dim 32 and no keys (TMA takes no empty dim) are left to the
// other kernels.
// CHECK-LABEL: func.func @not_taken
// CHECK-COUNT-3: kiln_kernel.attention
// CHECK-NOT: gpu.launch
func.func @not_taken(%q: memref<1x8x64xf32>, %k: memref<1x8x64xf32>, %v: memref<1x8x64xf32>,
                     %out: memref<1x8x64xf32>, %acc: memref<1x8x64xf32>,
                     %qh: memref<1x8x32xf16>, %outh: memref<1x8x32xf16>, %acch: memref<1x8x32xf32>,
                     %q64: memref<1x8x64xf16>, %k0: memref<1x0x64xf16>, %out64: memref<1x8x64xf16>) {
  kiln_kernel.attention ins(%q, %k, %v : memref<1x8x64xf32>, memref<1x8x64xf32>, memref<1x8x64xf32>)
      outs(%out, %acc : memref<1x8x64xf32>, memref<1x8x64xf32>) {scale = 0.125 : f64}
  kiln_kernel.attention ins(%qh, %qh, %qh : memref<1x8x32xf16>, memref<1x8x32xf16>, memref<1x8x32xf16>)
      outs(%outh, %acch : memref<1x8x32xf16>, memref<1x8x32xf32>) {scale = 0.125 : f64}
  kiln_kernel.attention ins(%q64, %k0, %k0 : memref<1x8x64xf16>, memref<1x0x64xf16>, memref<1x0x64xf16>)
      outs(%out64, %acc : memref<1x8x64xf16>, memref<1x8x64xf32>) {scale = 0.125 : f64}
  return
}

// -----

// Run-time lengths: TMA takes no empty dim, so the kernel's grid (row
// tiles times batch, host arithmetic) is empty where there are no keys,
// and a kernel writing zeros launches there instead.
// CHECK-LABEL: func.func @run_time_lengths
// CHECK-DAG: %[[LK:.*]] = memref.dim %arg1, %c1{{(_[0-9]+)?}} : memref<?x?x64xf16>
// CHECK-DAG: %[[ANY:.*]] = arith.cmpi sgt, %[[LK]], %c0
// CHECK-DAG: %[[NONE:.*]] = arith.cmpi eq, %[[LK]], %c0
// CHECK-DAG: %[[GRID:.*]] = arith.select %[[ANY]]
// CHECK-DAG: %[[ZEROGRID:.*]] = arith.select %[[NONE]]
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %[[ZEROGRID]],
// CHECK: memref.store %{{.*}}, %arg3
// CHECK: nvgpu.tma.create.descriptor
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %[[GRID]],
// CHECK: nvvm.wgmma.mma_async
func.func @run_time_lengths(%q: memref<?x?x64xf16>, %k: memref<?x?x64xf16>, %v: memref<?x?x64xf16>,
                            %out: memref<?x?x64xf16>, %acc: memref<?x?x64xf32>) {
  kiln_kernel.attention ins(%q, %k, %v : memref<?x?x64xf16>, memref<?x?x64xf16>, memref<?x?x64xf16>)
      outs(%out, %acc : memref<?x?x64xf16>, memref<?x?x64xf32>) {causal, scale = 0.125 : f64}
  return
}
