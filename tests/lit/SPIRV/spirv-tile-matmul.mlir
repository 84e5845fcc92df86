// RUN: kiln-opt %s --kiln-spirv-tile-matmul="mma-shape=16,16,16 subgroup-size=32" | FileCheck %s
// RUN: kiln-opt %s --kiln-spirv-tile-matmul="mma-shape=16,8,16 subgroup-size=32" | FileCheck %s --check-prefix=NARROW
// RUN: kiln-opt %s --kiln-spirv-tile-matmul="mma-shape=16,16,16 subgroup-size=32 max-workgroup-bytes=40000" | FileCheck %s --check-prefix=SMALL
// RUN: kiln-opt %s --kiln-spirv-tile-matmul | FileCheck %s --check-prefix=NONE
// RUN: not kiln-opt %s --kiln-spirv-tile-matmul="mma-shape=16,16,48" 2>&1 | FileCheck %s --check-prefix=BAD

// f16 2000x72 * 72x4104 -> f32: 17 x 16 workgroups (128 x 256 tiles) of 16
// subgroups of 32, two padded stages of A (128 x 16) and B (16 x 256) in
// workgroup memory, held as vectors of 4 f16; each invocation's loads (1 A
// and 2 B vec4 per step) go out 4 steps ahead: step 0's are staged before
// the loop and steps 1-3's carried into it. K in 5 steps of 16, each: the
// loads of step + 4, 4 A + 2 B matrix loads (strides in vectors) and 8
// multiply-adds, step + 1's loads stored to the other stage (one vector
// store each), one barrier. Then 8 accumulators through the subgroup's
// scratch to C += tile.
// CHECK-LABEL: func @f16
// CHECK: gpu.launch blocks({{[^)]*}}) in (%{{[a-z0-9]+}} = %c17{{[_0-9]*}}, %{{[a-z0-9]+}} = %c16{{[_0-9]*}}, %{{[a-z0-9]+}} = %c1{{[_0-9]*}})
// CHECK-SAME: threads({{[^)]*}}) in (%{{[a-z0-9]+}} = %c512
// CHECK: %[[AS:.*]] = memref.alloc() : memref<2x128x6xvector<4xf16>, #spirv.storage_class<Workgroup>>
// CHECK: %[[BS:.*]] = memref.alloc() : memref<2x16x66xvector<4xf16>, #spirv.storage_class<Workgroup>>
// CHECK: %[[SCRATCH:.*]] = memref.alloc() : memref<16x16x16xf32, #spirv.storage_class<Workgroup>>
// CHECK: gpu.subgroup_id
// CHECK: gpu.lane_id
// CHECK: vector.load %arg0{{.*}} {alignment = 8 : i64} : memref<2000x72xf16>, vector<4xf16>
// CHECK-COUNT-2: vector.load %arg1{{.*}} {alignment = 8 : i64} : memref<72x4104xf16>, vector<4xf16>
// CHECK-COUNT-9: vector.load
// CHECK-NOT: vector.load
// CHECK: memref.store {{.*}}, %[[AS]][%c0
// CHECK-COUNT-2: memref.store {{.*}}, %[[BS]][%c0
// CHECK-NEXT: gpu.barrier
// CHECK: gpu.subgroup_mma_constant_matrix %{{.*}} : !gpu.mma_matrix<16x16xf32, "COp">
// The loop carries 8 accumulators, then steps 1-3's loads (L0-L2: step
// 1's, staged first).
// CHECK: %{{.*}}:17 = scf.for %[[STEP:[a-z0-9]+]] = %{{.*}} to %c5{{[_0-9]*}} step %c1{{[_0-9]*}} iter_args({{(%[a-z0-9]+ = %[a-z0-9]+, )+}}%[[L0:[a-z0-9]+]] = %{{[a-z0-9]+}}, %[[L1:[a-z0-9]+]] = %{{[a-z0-9]+}}, %[[L2:[a-z0-9]+]] = %{{[a-z0-9]+}}, %[[L3:[a-z0-9]+]] = %{{[a-z0-9]+}}, %[[L4:[a-z0-9]+]] = %{{[a-z0-9]+}}, %[[L5:[a-z0-9]+]] = %{{[a-z0-9]+}}, %[[L6:[a-z0-9]+]] = %{{[a-z0-9]+}}, %[[L7:[a-z0-9]+]] = %{{[a-z0-9]+}}, %[[L8:[a-z0-9]+]] = %{{[a-z0-9]+}}) -> (!gpu.mma_matrix<16x16xf32, "COp">
// CHECK: %[[AHEAD:.*]] = arith.addi %[[STEP]], %c4
// CHECK-COUNT-3: vector.load
// CHECK: %[[STAGE:.*]] = arith.remui %[[STEP]], %c2
// CHECK-COUNT-4: gpu.subgroup_mma_load_matrix %[[AS]][%[[STAGE]], {{.*}} {leadDimension = 6 : index} : memref<2x128x6xvector<4xf16>, #spirv.storage_class<Workgroup>> -> !gpu.mma_matrix<16x16xf16, "AOp">
// CHECK-COUNT-2: gpu.subgroup_mma_load_matrix %[[BS]][%[[STAGE]], {{.*}} {leadDimension = 66 : index} : memref<2x16x66xvector<4xf16>, #spirv.storage_class<Workgroup>> -> !gpu.mma_matrix<16x16xf16, "BOp">
// CHECK-COUNT-8: gpu.subgroup_mma_compute
// CHECK-NOT: gpu.subgroup_mma_compute
// Step + 1's loads go to the other stage, then steps + 2 to + 4 are carried.
// CHECK: %[[NEXT:.*]] = arith.addi %[[STEP]], %c1
// CHECK: %[[OTHER:.*]] = arith.remui %[[NEXT]], %c2
// CHECK: memref.store %[[L0]], %[[AS]][%[[OTHER]],
// CHECK: memref.store %[[L1]], %[[BS]][%[[OTHER]],
// CHECK: memref.store %[[L2]], %[[BS]][%[[OTHER]],
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: scf.yield {{(%[a-z0-9]+, )+}}%[[L3]], %[[L4]], %[[L5]], %[[L6]], %[[L7]], %[[L8]], %{{[a-z0-9]+}}, %{{[a-z0-9]+}}, %{{[a-z0-9]+}} :
// CHECK: gpu.subgroup_mma_store_matrix %{{.*}}, %[[SCRATCH]]{{.*}} {leadDimension = 16 : index}
// CHECK-NEXT: gpu.barrier
// CHECK: scf.if
// CHECK: memref.load %[[SCRATCH]]
// CHECK: memref.load %arg2
// CHECK: arith.addf
// CHECK: memref.store {{.*}}, %arg2
// CHECK-NOT: linalg.matmul
// NARROW-LABEL: func @f16
// NARROW: memref.alloc() : memref<16x16x8xf32, #spirv.storage_class<Workgroup>>
// NARROW: scf.for
// NARROW-COUNT-4: gpu.subgroup_mma_load_matrix {{.*}} -> !gpu.mma_matrix<16x16xf16, "AOp">
// NARROW-COUNT-4: gpu.subgroup_mma_load_matrix {{.*}} -> !gpu.mma_matrix<16x8xf16, "BOp">
// NARROW-COUNT-16: gpu.subgroup_mma_compute
// 40000 bytes of workgroup memory hold none of the 128-row tilings (44.5
// and 45 KiB): the first that fits is 64 x 128 x 32 on 1 x 4 subgroups.
// SMALL-LABEL: func @f16
// SMALL: threads({{[^)]*}}) in (%{{[a-z0-9]+}} = %c128
// SMALL: memref.alloc() : memref<2x64x10xvector<4xf16>, #spirv.storage_class<Workgroup>>
// Nor do the 128 x 128 tiles of small outputs fit it: they keep 64 x 128.
// SMALL-LABEL: func @narrow
// SMALL: threads({{[^)]*}}) in (%{{[a-z0-9]+}} = %c128
// NONE-LABEL: func @f16
// NONE-NOT: gpu.launch
// NONE: linalg.matmul
// BAD: error: kiln-spirv-tile-matmul: no tiling holds a whole number of the cooperative-matrix shape 16x16x48 per subgroup tile and K step, with loads that subgroups of 32 invocations share evenly
func.func @f16(%a: memref<2000x72xf16>, %b: memref<72x4104xf16>, %c: memref<2000x4104xf32>) {
  linalg.matmul ins(%a, %b : memref<2000x72xf16>, memref<72x4104xf16>) outs(%c : memref<2000x4104xf32>)
  return
}

// Fewer than 128 workgroups of 128 x 256 (3 x 2 here) leave a large GPU
// idle: such outputs take 128 x 128 tiles on 2 x 4 subgroups, K steps of
// 32 (3 x 3 workgroups of 256 invocations).
// CHECK-LABEL: func @narrow
// CHECK: gpu.launch blocks({{[^)]*}}) in (%{{[a-z0-9]+}} = %c3{{[_0-9]*}}, %{{[a-z0-9]+}} = %c3{{[_0-9]*}}, %{{[a-z0-9]+}} = %c1{{[_0-9]*}})
// CHECK-SAME: threads({{[^)]*}}) in (%{{[a-z0-9]+}} = %c256
// CHECK: memref.alloc() : memref<2x128x10xvector<4xf16>, #spirv.storage_class<Workgroup>>
// CHECK: memref.alloc() : memref<2x32x34xvector<4xf16>, #spirv.storage_class<Workgroup>>
func.func @narrow(%a: memref<300x72xf16>, %b: memref<72x264xf16>, %c: memref<300x264xf32>) {
  linalg.matmul ins(%a, %b : memref<300x72xf16>, memref<72x264xf16>) outs(%c : memref<300x264xf32>)
  return
}

// Batches are the grid's z; B without a batch dim is shared by all.
// CHECK-LABEL: func @batched_shared_b
// CHECK: gpu.launch blocks({{[^)]*}}) in ({{.*}}, %{{[a-z0-9]+}} = %c3{{[_0-9]*}})
// CHECK: vector.load %arg0[%{{[a-z0-9]+}}, %{{[a-z0-9]+}}, %{{[a-z0-9]+}}]
// CHECK: vector.load %arg1[%{{[a-z0-9]+}}, %{{[a-z0-9]+}}] {alignment = 8 : i64} : memref<40x136xf16>
// CHECK: gpu.subgroup_mma_compute
func.func @batched_shared_b(%a: memref<3x130x40xf16>, %b: memref<40x136xf16>, %c: memref<3x130x136xf32>) {
  linalg.batch_matmul
      indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (k, n)>,
                       affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%a, %b : memref<3x130x40xf16>, memref<40x136xf16>) outs(%c : memref<3x130x136xf32>)
  return
}

// A bias + relu consumer of C runs on the accumulators' elements; C was
// zero-filled, so the tile is stored, not added, and neither fill nor
// generic remain.
// CHECK-LABEL: func @bias_relu
// CHECK-NOT: linalg.fill
// CHECK: gpu.subgroup_mma_compute
// CHECK: scf.if
// CHECK: memref.load %[[SCRATCH2:.*]][
// CHECK-NOT: memref.load %arg3
// CHECK: memref.load %arg2
// CHECK: arith.addf
// CHECK: arith.maximumf
// CHECK: memref.store %{{.*}}, %arg3
// CHECK-NOT: linalg.generic
func.func @bias_relu(%a: memref<256x64xf16>, %b: memref<64x128xf16>, %bias: memref<128xf32>,
                     %out: memref<256x128xf32>) {
  %c = memref.alloc() : memref<256x128xf32>
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<256x128xf32>)
  linalg.matmul ins(%a, %b : memref<256x64xf16>, memref<64x128xf16>) outs(%c : memref<256x128xf32>)
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

// Not taken: K not a multiple of 4 (rows of A are not whole 8-byte loads),
// f32 and bf16 inputs.
// CHECK-LABEL: func @not_taken
// CHECK-NOT: gpu.launch
// CHECK-COUNT-3: linalg.matmul
func.func @not_taken(%a: memref<33x18xf16>, %b: memref<18x70xf16>, %c: memref<33x70xf32>,
                     %x: memref<16x16xf32>, %y: memref<16x16xbf16>, %z: memref<16x16xf32>) {
  linalg.matmul ins(%a, %b : memref<33x18xf16>, memref<18x70xf16>) outs(%c : memref<33x70xf32>)
  linalg.matmul ins(%x, %x : memref<16x16xf32>, memref<16x16xf32>) outs(%z : memref<16x16xf32>)
  linalg.matmul ins(%y, %y : memref<16x16xbf16>, memref<16x16xbf16>) outs(%z : memref<16x16xf32>)
  return
}
