// RUN: kiln-opt %s --kiln-cpu-tile-matmul="vector-width=16" --split-input-file | FileCheck %s

// 13x200 @ 200x150 f32: 2 full 6x64 blocks per row block, one leftover block
// of 1 vector (16 columns), 6 scalar columns; 2 row blocks and 1 leftover row.
// CHECK-LABEL: func @mm
// CHECK-NOT: linalg.matmul
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = (%c0, %c0) to (%c2, %c2)
// CHECK: scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK: vector.broadcast
// CHECK: vector.fma
// CHECK: scf.parallel
// CHECK: math.fma
func.func @mm(%a: memref<13x200xf32>, %b: memref<200x150xf32>, %c: memref<13x150xf32>) {
  linalg.matmul ins(%a, %b : memref<13x200xf32>, memref<200x150xf32>) outs(%c : memref<13x150xf32>)
  return
}

// -----

// Other element types keep the generic lowering.
// CHECK-LABEL: func @f64
// CHECK: linalg.matmul
func.func @f64(%a: memref<8x8xf64>, %b: memref<8x8xf64>, %c: memref<8x8xf64>) {
  linalg.matmul ins(%a, %b : memref<8x8xf64>, memref<8x8xf64>) outs(%c : memref<8x8xf64>)
  return
}

// -----

// A bias add right after the matmul runs on the accumulators: C is never
// stored, the sum goes straight to the output.
// CHECK-LABEL: func @bias
// CHECK-SAME: (%{{.*}}: memref<12x64xf32>, %{{.*}}: memref<64x64xf32>, %[[BIAS:.*]]: memref<64xf32>, %[[OUT:.*]]: memref<12x64xf32>)
// CHECK-NOT: linalg.generic
// CHECK: vector.fma
// CHECK: vector.load %[[BIAS]]
// CHECK: arith.addf %{{.*}} : vector<16xf32>
// CHECK: vector.store %{{.*}}, %[[OUT]]
// CHECK-NOT: vector.store {{.*}}, %alloc
func.func @bias(%a: memref<12x64xf32>, %b: memref<64x64xf32>, %bias: memref<64xf32>, %out: memref<12x64xf32>) {
  %c = memref.alloc() : memref<12x64xf32>
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<12x64xf32>)
  linalg.matmul ins(%a, %b : memref<12x64xf32>, memref<64x64xf32>) outs(%c : memref<12x64xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%c, %bias : memref<12x64xf32>, memref<64xf32>) outs(%out : memref<12x64xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  memref.dealloc %c : memref<12x64xf32>
  return
}

// -----

// An epilogue whose output is a temporary allocated after the matmul (a
// reshape of it is the result): the allocation moves above the fused
// kernel that stores into it.
// CHECK-LABEL: func @epilogue_into_temporary
// CHECK: %[[T:.*]] = memref.alloc() : memref<8x32xf32>
// CHECK-NOT: linalg.generic
// CHECK: vector.fma
// CHECK: math.tanh %{{.*}} : vector<16xf32>
// CHECK: vector.store %{{.*}}, %[[T]]
// CHECK: memref.collapse_shape %[[T]]
func.func @epilogue_into_temporary(%a: memref<8x16xf32>, %b: memref<16x32xf32>, %out: memref<256xf32>) {
  %c = memref.alloc() : memref<8x32xf32>
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<8x32xf32>)
  linalg.matmul ins(%a, %b : memref<8x16xf32>, memref<16x32xf32>) outs(%c : memref<8x32xf32>)
  %t = memref.alloc() : memref<8x32xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%c : memref<8x32xf32>) outs(%t : memref<8x32xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = math.tanh %x : f32
    linalg.yield %y : f32
  }
  %flat = memref.collapse_shape %t [[0, 1]] : memref<8x32xf32> into memref<256xf32>
  memref.copy %flat, %out : memref<256xf32> to memref<256xf32>
  memref.dealloc %c : memref<8x32xf32>
  memref.dealloc %t : memref<8x32xf32>
  return
}
