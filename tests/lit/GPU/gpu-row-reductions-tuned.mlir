// RUN: kiln-opt %s --kiln-gpu-row-reductions | FileCheck %s

// A tuned config (kiln.tuned; key: op "row_reduction", the first operand's
// element type, rows x row length anchored to powers of two: 20 x 30000 ->
// 16 x 32768) gives 128 threads per row instead of 256, striding 128 x 4.
// CHECK: module attributes {kiln.tune_keys = ["gpu.row_reduction@cd58b0815c2e5dd8:row_reduction:f32:16x32768"]
// CHECK-LABEL: func @rowsum
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c20, {{.*}}) threads({{.*}}) in ({{.*}} = %c128
// CHECK: scf.for %{{.*}} = %{{.*}} to %c30000 step %c512 {{.*}} -> (vector<4xf32>)
module attributes {kiln.tuned = {"gpu.row_reduction@cd58b0815c2e5dd8:row_reduction:f32:16x32768" = "128x4"}} {
func.func @rowsum(%x: memref<4x5x30000xf32>, %out: memref<4x5xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : memref<4x5x30000xf32>) outs(%out : memref<4x5xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %e = math.exp %a : f32
    %0 = arith.addf %e, %acc fastmath<reassoc> : f32
    linalg.yield %0 : f32
  }
  return
}
}
