// RUN: kiln-opt %s --kiln-cuda-mma-attention --split-input-file | FileCheck %s

// bf16, head dim 128, causal: one launch of 8 warps per 128 query rows of
// each batch entry (2 x 2 blocks); Q, K and V by cp.async; S = Q K^T and
// O += P V on mma.sync m16n8k16 (K by ldmatrix, V by ldmatrix.trans); the
// causal and tail masks only in the tiles that need them (the else branch
// compares nothing); the row max over a quad by xor shuffles; exponentials
// by ex2; P rounded to bf16 in registers; the unused f32 scratch is freed.
// CHECK-LABEL: func.func @causal_bf16
// CHECK-NOT: kiln_kernel.attention
// CHECK-NOT: memref.alloc
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c4{{.*}}, {{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}}) threads({{.*}}) in ({{.*}} = %c256
// CHECK-SAME: dynamic_shared_memory_size %c98304_i32
// CHECK: nvgpu.device_async_copy
// CHECK: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = false}
// CHECK: scf.for
// CHECK: nvvm.mma.sync {{.*}} {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>}
// CHECK: scf.if
// CHECK: arith.cmpi ule
// CHECK: } else {
// CHECK-NOT: arith.cmpi
// CHECK: scf.yield
// CHECK: gpu.shuffle xor
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK: arith.truncf {{.*}} : vector<2xf32> to vector<2xbf16>
// CHECK: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK: vector.store {{.*}} : memref<2x200x128xbf16>, vector<2xbf16>
func.func @causal_bf16(%q: memref<2x200x128xbf16>, %k: memref<2x77x128xbf16>, %v: memref<2x77x128xbf16>,
                       %out: memref<2x200x128xbf16>) {
  %acc = memref.alloc() : memref<2x200x128xf32>
  kiln_kernel.attention ins(%q, %k, %v : memref<2x200x128xbf16>, memref<2x77x128xbf16>, memref<2x77x128xbf16>)
      outs(%out, %acc : memref<2x200x128xbf16>, memref<2x200x128xf32>) {causal, scale = 0.088 : f64}
  return
}

// -----

// f32 and head dim 32 are left to kiln-attention-to-loops.
// CHECK-LABEL: func.func @not_taken
// CHECK-COUNT-2: kiln_kernel.attention
// CHECK-NOT: gpu.launch
func.func @not_taken(%q: memref<1x8x64xf32>, %k: memref<1x8x64xf32>, %v: memref<1x8x64xf32>,
                     %out: memref<1x8x64xf32>, %acc: memref<1x8x64xf32>,
                     %qh: memref<1x8x32xf16>, %outh: memref<1x8x32xf16>, %acch: memref<1x8x32xf32>) {
  kiln_kernel.attention ins(%q, %k, %v : memref<1x8x64xf32>, memref<1x8x64xf32>, memref<1x8x64xf32>)
      outs(%out, %acc : memref<1x8x64xf32>, memref<1x8x64xf32>) {scale = 0.125 : f64}
  kiln_kernel.attention ins(%qh, %qh, %qh : memref<1x8x32xf16>, memref<1x8x32xf16>, memref<1x8x32xf16>)
      outs(%outh, %acch : memref<1x8x32xf16>, memref<1x8x32xf32>) {scale = 0.125 : f64}
  return
}

// -----

// Run-time batch and lengths: the grid is host arithmetic of the buffers'
// sizes (row tiles of 128 times the batch), and so are the key tiles; the
// kernel masks keys and stores rows against the run-time sizes, and gives
// 0 where there are no keys.
// CHECK-LABEL: func.func @run_time_lengths
// CHECK-DAG: %[[B:.*]] = memref.dim %arg0, %c0{{(_[0-9]+)?}} : memref<?x?x64xf16>
// CHECK-DAG: %[[LQ:.*]] = memref.dim %arg0, %c1{{(_[0-9]+)?}} : memref<?x?x64xf16>
// CHECK-DAG: %[[LK:.*]] = memref.dim %arg1, %c1{{(_[0-9]+)?}} : memref<?x?x64xf16>
// CHECK-DAG: %[[ROWTILES:.*]] = arith.ceildivsi %[[LQ]], %c128
// CHECK-DAG: %[[KEYTILES:.*]] = arith.ceildivsi %[[LK]], %c64
// CHECK: %[[GRID:.*]] = arith.muli %[[ROWTILES]], %[[B]]
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %[[GRID]], {{.*}}) threads({{.*}}) in ({{.*}} = %c256
// CHECK: arith.divui %{{.*}}, %[[ROWTILES]]
// CHECK: nvgpu.device_async_copy
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[KEYTILES]] step
// CHECK: arith.cmpi ult, %{{.*}}, %[[LK]]
// CHECK: arith.cmpi eq, %[[LK]]
// CHECK: arith.cmpi ult, %{{.*}}, %[[LQ]]
// CHECK: vector.store {{.*}} : memref<?x?x64xf16>, vector<2xf16>
func.func @run_time_lengths(%q: memref<?x?x64xf16>, %k: memref<?x?x64xf16>, %v: memref<?x?x64xf16>,
                            %out: memref<?x?x64xf16>, %acc: memref<?x?x64xf32>) {
  kiln_kernel.attention ins(%q, %k, %v : memref<?x?x64xf16>, memref<?x?x64xf16>, memref<?x?x64xf16>)
      outs(%out, %acc : memref<?x?x64xf16>, memref<?x?x64xf32>) {scale = 0.125 : f64}
  return
}
