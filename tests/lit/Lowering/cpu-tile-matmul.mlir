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
