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

// ... else, for outputs of more than 64 rows and columns, the same tiles
// with K cut into the parts that best fill whole waves of fill-blocks
// (1024^3: 64 blocks x 2 parts; 3 or 4 parts would fill less of their
// second wave) ...
// CHECK: kiln.untuned = {"gpu.matmul.simt@40dc3cc653333b81:matmul:f32,f32,f32:1024x1024x1024" = "128x16x8x2"}
// CHECK-LABEL: func @wide_split
// CHECK: %[[PARTS:.*]] = memref.alloc() : memref<2x1024x1024xf32>
// CHECK: gpu.launch blocks({{[^)]*}}) in (%{{[a-z0-9]+}} = %c8{{[_0-9]*}}, %{{[a-z0-9]+}} = %c8{{[_0-9]*}}, %{{[a-z0-9]+}} = %c2{{[_0-9]*}})
// CHECK-SAME: threads({{[^)]*}}) in (%{{[a-z0-9]+}} = %c256
// CHECK-SAME: memref<2x16x128xf32, #gpu.address_space<workgroup>>
func.func @wide_split(%a: memref<1024x1024xf32>, %b: memref<1024x1024xf32>, %c: memref<1024x1024xf32>) {
  linalg.matmul ins(%a, %b : memref<1024x1024xf32>, memref<1024x1024xf32>) outs(%c : memref<1024x1024xf32>)
  return
}

// -----

// ... else (K too short to cut into parts of at least 256 that fill 3/4
// of their waves) 64x64 outputs per block of 256 threads (4x4 each):
// 1024^2 is 256 such blocks instead of 64, enough to fill the GPU unsplit.
// CHECK-LABEL: func @narrow
// CHECK: gpu.launch blocks({{[^)]*}}) in (%{{[a-z0-9]+}} = %c16{{[_0-9]*}}, %{{[a-z0-9]+}} = %c16{{[_0-9]*}}, %{{[a-z0-9]+}} = %c1{{[_0-9]*}})
// CHECK-SAME: threads({{[^)]*}}) in (%{{[a-z0-9]+}} = %c256
// CHECK-SAME: memref<2x16x64xf32, #gpu.address_space<workgroup>>
// CHECK: scf.for {{.*}} -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>) {
// CHECK-NOT: gpu.launch
func.func @narrow(%a: memref<1024x384xf32>, %b: memref<384x1024xf32>, %c: memref<1024x1024xf32>) {
  linalg.matmul ins(%a, %b : memref<1024x384xf32>, memref<384x1024xf32>) outs(%c : memref<1024x1024xf32>)
  return
}

// -----

// Where even those are too few, K splits into parts of at least 512 (at
// most 8): 64 x 1024 (64 rows: half of each 128-row tile would idle) by
// K 2048 is 16 blocks x 4 parts. The choice is recorded under the
// kernel's tune key: the tuner times it first. Nothing zeroed C, so the
// adding kernel adds the parts' sum to it.
// CHECK: kiln.untuned = {"gpu.matmul.simt@40dc3cc653333b81:matmul:f32,f32,f32:64x1024x2048" = "64x16x4x4"}
// CHECK-LABEL: func @narrow_split
// CHECK: %[[PARTS:.*]] = memref.alloc() : memref<4x64x1024xf32>
// CHECK: gpu.launch blocks({{[^)]*}}) in (%{{[a-z0-9]+}} = %c16{{[_0-9]*}}, %{{[a-z0-9]+}} = %c1{{[_0-9]*}}, %{{[a-z0-9]+}} = %c4{{[_0-9]*}})
// CHECK-SAME: memref<2x16x64xf32, #gpu.address_space<workgroup>>
// CHECK-NOT: {{%arg2[^0-9]}}
// CHECK: gpu.terminator
// CHECK: gpu.launch
// CHECK-COUNT-4: vector.load %[[PARTS]]
// CHECK: %[[OLD:.*]] = vector.load %arg2
// CHECK: arith.addf %[[OLD]]
// CHECK: vector.store %{{.*}}, %arg2
func.func @narrow_split(%a: memref<64x2048xf32>, %b: memref<2048x1024xf32>, %c: memref<64x1024xf32>) {
  linalg.matmul ins(%a, %b : memref<64x2048xf32>, memref<2048x1024xf32>) outs(%c : memref<64x1024xf32>)
  return
}

// -----

// A tuned tiling (key: the f32 matmul's M x N x K anchored to powers of
// two: 300 x 260 x 200 -> 256 x 256 x 256) replaces the untuned one: 32x32
// outputs per block of 64 threads, K in steps of 8, so 9 x 10 blocks.
// CHECK: module attributes {kiln.tune_keys = ["gpu.matmul.simt@40dc3cc653333b81:matmul:f32,f32,f32:256x256x256"]
// CHECK-NOT: kiln.untuned
// CHECK-LABEL: func @tuned
// CHECK: gpu.launch blocks({{[^)]*}}) in (%{{[a-z0-9]+}} = %c9{{[_0-9]*}}, %{{[a-z0-9]+}} = %c10{{[_0-9]*}}, %{{[a-z0-9]+}} = %c1{{[_0-9]*}})
// CHECK-SAME: threads({{[^)]*}}) in (%{{[a-z0-9]+}} = %c64
// CHECK-SAME: workgroup({{.*}} : memref<2x8x32xf32, #gpu.address_space<workgroup>>, {{.*}} : memref<2x8x32xf32, #gpu.address_space<workgroup>>)
module attributes {kiln.tuned = {"gpu.matmul.simt@40dc3cc653333b81:matmul:f32,f32,f32:256x256x256" = "32x8x4x1"}} {
func.func @tuned(%a: memref<300x200xf32>, %b: memref<200x260xf32>, %c: memref<300x260xf32>) {
  linalg.matmul ins(%a, %b : memref<300x200xf32>, memref<200x260xf32>) outs(%c : memref<300x260xf32>)
  return
}
}

// -----

// At most 32 rows (a decode step's) take 32x32 tiles per block of 64
// threads, K split the same way: 16 x 1022 by K 4096 is 32 blocks x 8
// parts of 512. Each block sums its part of K (a K step's loads start at
// its part's first k and stop at its last) into its part of the partial
// sums, padded to rows of 4; a second kernel adds the 8 parts in order
// through the epilogue (bias) into C, whose rows of 1022 are even.
// CHECK-LABEL: func @split
// CHECK: %[[PARTS:.*]] = memref.alloc() : memref<8x16x1024xf32>
// CHECK: gpu.launch blocks(%{{.*}}, %{{.*}}, %[[Z:.*]]) in (%{{[a-z0-9]+}} = %c32{{[_0-9]*}}, %{{[a-z0-9]+}} = %c1{{[_0-9]*}}, %{{[a-z0-9]+}} = %c8{{[_0-9]*}})
// CHECK-SAME: threads({{[^)]*}}) in (%{{[a-z0-9]+}} = %c64
// CHECK-SAME: memref<2x8x32xf32, #gpu.address_space<workgroup>>
// CHECK: %[[PART:.*]] = arith.remui %[[Z]], %c8
// CHECK: %[[BEGIN:.*]] = arith.muli %[[PART]], %c512
// CHECK: %[[END0:.*]] = arith.addi %[[BEGIN]], %c512
// CHECK: %[[END:.*]] = arith.minsi %[[END0]], %c4096
// CHECK: arith.addi %[[BEGIN]], %{{.*}} : index
// CHECK: arith.cmpi ule, %{{.*}}, %[[END]]
// CHECK: %[[LEN:.*]] = arith.subi %[[END]], %[[BEGIN]]
// CHECK: %[[STEPS:.*]] = arith.ceildivsi %[[LEN]], %c8
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[STEPS]]
// CHECK: arith.cmpi ule, %{{.*}}, %[[END]]
// CHECK: vector.store %{{.*}}, %[[PARTS]][%[[Z]], %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<8x16x1024xf32>, vector<4xf32>
// CHECK-NOT: {{%arg[23][^0-9]}}
// CHECK: gpu.terminator
// CHECK: gpu.launch
// CHECK-COUNT-8: vector.load %[[PARTS]]
// CHECK-NOT: vector.load %[[PARTS]]
// CHECK: vector.load %arg2{{.*}} : memref<1022xf32>, vector<2xf32>
// CHECK: vector.store %{{.*}}, %arg3[%{{.*}}, %{{.*}}] {alignment = 8 : i64} : memref<16x1022xf32>, vector<2xf32>
// CHECK-NOT: gpu.launch
func.func @split(%a: memref<16x4096xf32>, %b: memref<4096x1022xf32>, %bias: memref<1022xf32>,
                 %out: memref<16x1022xf32>) {
  %c = memref.alloc() : memref<16x1022xf32>
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<16x1022xf32>)
  linalg.matmul ins(%a, %b : memref<16x4096xf32>, memref<4096x1022xf32>) outs(%c : memref<16x1022xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>,
                                   affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%c, %bias : memref<16x1022xf32>, memref<1022xf32>) outs(%out : memref<16x1022xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  memref.dealloc %c : memref<16x1022xf32>
  return
}

// -----

// A K known only at run time is never split (sizes known only at run time
// take the two unsplit tilings).
// CHECK-LABEL: func @run_time_k
// CHECK-NOT: memref.alloc
// CHECK: gpu.launch
func.func @run_time_k(%a: memref<16x?xf32>, %b: memref<?x1024xf32>, %c: memref<16x1024xf32>) {
  linalg.matmul ins(%a, %b : memref<16x?xf32>, memref<?x1024xf32>) outs(%c : memref<16x1024xf32>)
  return
}

// -----

// Rows alone known at run time (a decode step's tokens): up to 32 rows the
// 32 x 32 tiles of 64 threads in 8 parts that 16 static rows take, up to
// 128 the 128 x 128 tiles in 4 parts (32 x 4 blocks); each kernel and its
// adding kernel launch only where the rows fall in its bucket, and its
// partial sums have rows only there. Past 128 rows, the two run-time
// tilings, launched where the rows are more than 128.
// CHECK-LABEL: func @run_time_rows
// CHECK: %[[M:.*]] = memref.dim %arg2, %c0
// CHECK: arith.cmpi sle, %{{.*}}, %c32
// CHECK: %[[ROWS32:.*]] = arith.select %{{.*}}, %{{.*}}, %c0{{.*}} : index
// CHECK: %[[PARTS32:.*]] = memref.alloc(%[[ROWS32]]) : memref<8x?x4096xf32>
// CHECK: gpu.launch blocks({{[^)]*}}) in (%{{[a-z0-9]+}} = %{{.*}}, %{{[a-z0-9]+}} = %{{.*}}, %{{[a-z0-9]+}} = %c8{{[_0-9]*}}) threads({{[^)]*}}) in (%{{[a-z0-9]+}} = %c64
// CHECK: gpu.launch
// CHECK-COUNT-8: vector.load %[[PARTS32]]
// CHECK: arith.cmpi sle, %{{.*}}, %c128
// CHECK: memref.alloc(%{{.*}}) : memref<4x?x4096xf32>
// CHECK: gpu.launch blocks({{[^)]*}}) in (%{{[a-z0-9]+}} = %{{.*}}, %{{[a-z0-9]+}} = %{{.*}}, %{{[a-z0-9]+}} = %c4{{[_0-9]*}}) threads({{[^)]*}}) in (%{{[a-z0-9]+}} = %c256
// CHECK: gpu.launch
// CHECK: arith.cmpi sgt, %[[M]], %c128
// CHECK-NOT: memref.alloc
// CHECK: gpu.launch
// CHECK: gpu.launch
// CHECK-NOT: gpu.launch
func.func @run_time_rows(%a: memref<?x4096xf32>, %b: memref<4096x4096xf32>, %c: memref<?x4096xf32>) {
  linalg.matmul ins(%a, %b : memref<?x4096xf32>, memref<4096x4096xf32>) outs(%c : memref<?x4096xf32>)
  return
}
