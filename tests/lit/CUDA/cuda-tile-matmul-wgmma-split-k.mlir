// RUN: kiln-opt %s --kiln-cuda-tile-matmul="tensor-cores=1 wgmma=1 fill-blocks=132" | FileCheck %s
// RUN: kiln-opt %s --kiln-cuda-tile-matmul="tensor-cores=1 wgmma=1" | FileCheck %s --check-prefix=UNSPLIT
// RUN: kiln-opt %s --kiln-cuda-tile-matmul="tensor-cores=1 wgmma=1 wgmma-split-k=3" | FileCheck %s --check-prefix=FORCED

// 512 x 1024 outputs over K 8192 are 16 tiles of 128 x 256: with 132 SMs
// to fill, the kernel narrows its tiles to 128 x 128 (six stages) and
// splits K into 4 parts of 32 steps, one block each (4 x 8 tiles x 4
// parts = 128 blocks). Each block stores its sums into its part of a buffer of
// partial sums; a second kernel (a thread per pair of columns) adds the 4
// parts in order and stores through the epilogue (bias, cast to bf16).
// CHECK-LABEL: func @few_tiles
// CHECK: %[[PARTS:.*]] = memref.alloc() : memref<4x512x1024xf32>
// CHECK: gpu.launch blocks({{[^)]*}}) in (%{{[a-z0-9]+}} = %c128{{[_0-9]*}}, %{{[a-z0-9]+}} = %c1{{[_0-9]*}}, %{{[a-z0-9]+}} = %c1{{[_0-9]*}})
// CHECK-SAME: dynamic_shared_memory_size %c197728_i32
// CHECK: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 128, k = 16>
// CHECK: vector.store %{{.*}}, %[[PARTS]][%{{.*}}, %{{.*}}, %{{.*}}] {alignment = 8 : i64} : memref<4x512x1024xf32>, vector<2xf32>
// CHECK: gpu.terminator
// CHECK: gpu.launch blocks({{[^)]*}}) in (%{{[a-z0-9]+}} = %c1024{{[_0-9]*}}, %{{[a-z0-9]+}} = %c1{{[_0-9]*}}, %{{[a-z0-9]+}} = %c1{{[_0-9]*}}) threads({{[^)]*}}) in (%{{[a-z0-9]+}} = %c256
// CHECK-COUNT-4: vector.load %[[PARTS]]
// CHECK: vector.load %arg2
// CHECK: arith.truncf %{{.*}} : vector<2xf32> to vector<2xbf16>
// CHECK: vector.store %{{.*}}, %arg3
// CHECK-NOT: gpu.launch
// UNSPLIT-LABEL: func @few_tiles
// UNSPLIT-NOT: memref.alloc() : memref<{{[0-9]+}}x512x1024xf32>
// UNSPLIT: <m = 64, n = 256, k = 16>
func.func @few_tiles(%a: memref<512x8192xbf16>, %b: memref<8192x1024xbf16>, %bias: memref<1024xf32>,
                     %out: memref<512x1024xbf16>) {
  %c = memref.alloc() : memref<512x1024xf32>
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<512x1024xf32>)
  linalg.matmul ins(%a, %b : memref<512x8192xbf16>, memref<8192x1024xbf16>) outs(%c : memref<512x1024xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>,
                                   affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%c, %bias : memref<512x1024xf32>, memref<1024xf32>) outs(%out : memref<512x1024xbf16>) {
  ^bb0(%x: f32, %y: f32, %o: bf16):
    %s = arith.addf %x, %y : f32
    %t = arith.truncf %s : f32 to bf16
    linalg.yield %t : bf16
  }
  memref.dealloc %c : memref<512x1024xf32>
  return
}

// 2048^3 is 128 tiles of 128 x 256 already: one wave, not split.
// CHECK-LABEL: func @many_tiles
// CHECK-NOT: memref.alloc
// CHECK: <m = 64, n = 256, k = 16>
// K 72 is 2 steps: 3 parts asked are 2 (no part is empty); C += the sum
// where nothing zeroed C.
// FORCED-LABEL: func @many_tiles
// FORCED: %[[PARTS:.*]] = memref.alloc() : memref<2x300x264xf32>
// FORCED: gpu.launch
// FORCED: gpu.launch
// FORCED-COUNT-2: vector.load %[[PARTS]]
// FORCED: vector.load %arg5
// FORCED: arith.addf
// FORCED: vector.store %{{.*}}, %arg5
func.func @many_tiles(%a: memref<2048x2048xbf16>, %b: memref<2048x2048xbf16>, %c: memref<2048x2048xf32>,
                      %x: memref<300x72xbf16>, %y: memref<72x264xbf16>, %z: memref<300x264xf32>) {
  linalg.matmul ins(%a, %b : memref<2048x2048xbf16>, memref<2048x2048xbf16>) outs(%c : memref<2048x2048xf32>)
  linalg.matmul ins(%x, %y : memref<300x72xbf16>, memref<72x264xbf16>) outs(%z : memref<300x264xf32>)
  return
}

// Run-time sizes are never split, even when asked.
// FORCED-LABEL: func @dynamic
// FORCED-NOT: memref.alloc
// FORCED: <m = 64, n = 256, k = 16>
func.func @dynamic(%a: memref<?x?xbf16>, %b: memref<?x?xbf16>, %c: memref<?x?xf32>) {
  linalg.matmul ins(%a, %b : memref<?x?xbf16>, memref<?x?xbf16>) outs(%c : memref<?x?xf32>)
  return
}

// Rows alone known at run time (a decode step's tokens): up to 128 rows
// (one row of tiles) the 128-wide tiles in 4 parts that 16 static rows
// take, its partial sums M rows only where M is in that bucket, its adding
// kernel storing through the epilogue; up to 512 rows 128-wide tiles over
// all of K; past 512 the run-time-size kernel (256 wide). Unfilled (no
// fill-blocks), the run-time-size kernel alone; split 3 when asked.
// CHECK-LABEL: func @run_time_rows
// CHECK: %[[M:.*]] = memref.dim %arg0, %c0
// CHECK: %[[IN128:.*]] = arith.cmpi sle, %{{.*}}, %c128
// CHECK: %[[ROWS:.*]] = arith.select %[[IN128]], %{{.*}}, %c0{{.*}} : index
// CHECK: %[[PARTS:.*]] = memref.alloc(%[[ROWS]]) : memref<4x?x4096xf32>
// CHECK: %[[BLOCKS:.*]] = arith.select %[[IN128]], %{{.*}}, %c0{{.*}} : index
// CHECK: gpu.launch blocks({{[^)]*}}) in (%{{[a-z0-9]+}} = %[[BLOCKS]],
// CHECK: <m = 64, n = 128, k = 16>
// CHECK: vector.store %{{.*}}, %[[PARTS]][%{{.*}}, %{{.*}}, %{{.*}}] {alignment = 8 : i64} : memref<4x?x4096xf32>, vector<2xf32>
// CHECK: gpu.launch
// CHECK-COUNT-4: vector.load %[[PARTS]]
// CHECK: arith.truncf %{{.*}} : vector<2xf32> to vector<2xbf16>
// CHECK: arith.cmpi sle, %{{.*}}, %c512
// CHECK-NOT: memref.alloc
// CHECK: gpu.launch
// CHECK: <m = 64, n = 128, k = 16>
// CHECK: arith.cmpi sgt, %[[M]], %c512
// CHECK: gpu.launch
// CHECK: <m = 64, n = 256, k = 16>
// CHECK-NOT: gpu.launch
// UNSPLIT-LABEL: func @run_time_rows
// UNSPLIT-NOT: memref.alloc({{.*}}) : memref<{{[0-9]+}}x?x4096xf32>
// UNSPLIT: gpu.launch
// UNSPLIT: <m = 64, n = 256, k = 16>
// FORCED-LABEL: func @run_time_rows
// FORCED: memref.alloc(%{{.*}}) : memref<3x?x4096xf32>
// FORCED: <m = 64, n = 256, k = 16>
// FORCED-COUNT-3: vector.load
func.func @run_time_rows(%a: memref<?x4096xbf16>, %b: memref<4096x4096xbf16>, %bias: memref<4096xf32>,
                         %out: memref<?x4096xbf16>) {
  %c0 = arith.constant 0 : index
  %m = memref.dim %a, %c0 : memref<?x4096xbf16>
  %c = memref.alloc(%m) : memref<?x4096xf32>
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<?x4096xf32>)
  linalg.matmul ins(%a, %b : memref<?x4096xbf16>, memref<4096x4096xbf16>) outs(%c : memref<?x4096xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>,
                                   affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%c, %bias : memref<?x4096xf32>, memref<4096xf32>) outs(%out : memref<?x4096xbf16>) {
  ^bb0(%x: f32, %y: f32, %o: bf16):
    %s = arith.addf %x, %y : f32
    %t = arith.truncf %s : f32 to bf16
    linalg.yield %t : bf16
  }
  memref.dealloc %c : memref<?x4096xf32>
  return
}

// 4096^2 outputs are 512 tiles of 128 x 256: the kernel is persistent, 132
// blocks (one per SM), each taking tiles 132 apart. Its producer and its
// consumers walk the same tiles, counting the block's K steps across them
// (stage and barrier phase); after a tile's last step the consumers give
// its stage back before storing, so the producer loads the next tile
// meanwhile.
// CHECK-LABEL: func @persistent
// CHECK: gpu.launch blocks(%[[BX:[a-z0-9]+]], {{[^)]*}}) in (%[[GX:[a-z0-9]+]] = %c132{{[_0-9]*}}, %{{[a-z0-9]+}} = %c1{{[_0-9]*}}, %{{[a-z0-9]+}} = %c1{{[_0-9]*}})
// CHECK: nvvm.setmaxregister decrease
// CHECK: scf.for %{{.*}} = %[[BX]] to %c512{{[_0-9]*}} step %[[GX]] iter_args(%[[PDONE:.*]] = %c0
// CHECK: scf.for %[[PSTEP:.*]] = %c0{{[_0-9]*}} to %c64{{[_0-9]*}} step
// CHECK: arith.addi %[[PDONE]], %[[PSTEP]]
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global
// CHECK: nvvm.setmaxregister increase
// CHECK: scf.for %{{.*}} = %[[BX]] to %c512{{[_0-9]*}} step %[[GX]] iter_args(%[[DONE:.*]] = %c0
// CHECK: scf.for %[[STEP:.*]] = %c0{{[_0-9]*}} to %c64{{[_0-9]*}} step
// CHECK: arith.addi %[[DONE]], %[[STEP]]
// CHECK: nvvm.wgmma.mma_async
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: %[[LAST:.*]] = arith.remui %{{.*}}, %c4
// CHECK: scf.if
// CHECK: arith.muli %[[LAST]], %c8
// CHECK: nvvm.mbarrier.arrive
// CHECK: vector.store
func.func @persistent(%a: memref<4096x4096xbf16>, %b: memref<4096x4096xbf16>, %c: memref<4096x4096xf32>) {
  linalg.matmul ins(%a, %b : memref<4096x4096xbf16>, memref<4096x4096xbf16>) outs(%c : memref<4096x4096xf32>)
  return
}
