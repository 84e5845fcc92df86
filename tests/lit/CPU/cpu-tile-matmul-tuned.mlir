// RUN: kiln-opt %s --kiln-cpu-tile-matmul="vector-width=16" --split-input-file 2>&1 | FileCheck %s

// A tuned config (module attribute kiln.tuned, set by the compiler from the
// tune files) replaces the default blocking (6 rows x 4 vectors, k_block
// 256, block_rows 96, block_cols 1024) of the kernel whose tune key it
// names: 4 rows x 3 vectors packs A in panels of 4 rows and B in panels of
// 48 columns, in blocks of 16 rows (block_rows 64, cut to the 13 rows
// rounded up to 4) and, of block_cols 384, 96 columns (two blocks of two
// panels for the two threads), for 13x200 @ 200x150 (shape anchored
// to 16x128x256). The key asked for is recorded in kiln.tune_keys.
// CHECK: module attributes {kiln.tune_keys = ["cpu.matmul@1888e9618e81c6da:matmul:f32,f32,f32:16x128x256"]
// CHECK-LABEL: func @mm
// CHECK: scf.parallel (%{{.*}}) = (%c0) to (%c2) step (%c1)
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<4x200x4xf32>
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<2x200x48xf32>
// CHECK: scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
module attributes {kiln.tuned = {"cpu.matmul@1888e9618e81c6da:matmul:f32,f32,f32:16x128x256" = "4x3x256x64x384"}} {
func.func @mm(%a: memref<13x200xf32>, %b: memref<200x150xf32>, %c: memref<13x150xf32>) {
  linalg.matmul ins(%a, %b : memref<13x200xf32>, memref<200x150xf32>) outs(%c : memref<13x150xf32>)
  return
}
}

// -----

// A config that is not one of the candidates is a warning, and the default
// (panels of 6 rows and of 64 columns).
// CHECK: warning: tuned config '5x5' of cpu.matmul@1888e9618e81c6da:matmul:f32,f32,f32:16x128x256 is not one of cpu.matmul's candidates; using the default
// CHECK-LABEL: func @stale
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<3x200x6xf32>
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<2x200x64xf32>
module attributes {kiln.tuned = {"cpu.matmul@1888e9618e81c6da:matmul:f32,f32,f32:16x128x256" = "5x5"}} {
func.func @stale(%a: memref<13x200xf32>, %b: memref<200x150xf32>, %c: memref<13x150xf32>) {
  linalg.matmul ins(%a, %b : memref<13x200xf32>, memref<200x150xf32>) outs(%c : memref<13x150xf32>)
  return
}
}
