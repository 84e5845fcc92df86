// RUN: kiln-opt %s --kiln-cpu-tile-matmul="vector-width=16" --split-input-file 2>&1 | FileCheck %s

// A tuned config (module attribute kiln.tuned, set by the compiler from the
// tune files) replaces the default 6 rows x 4 vectors of the kernel whose
// tune key it names: 4 rows x 3 vectors gives 3 column blocks of 48 and 3
// row blocks for 13x200 @ 200x150 (shape anchored to 16x128x256). The key
// asked for is recorded in kiln.tune_keys.
// CHECK: module attributes {kiln.tune_keys = ["cpu.matmul@31267c7f73e56079:matmul:f32,f32,f32:16x128x256"]
// CHECK-LABEL: func @mm
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = (%c0, %c0) to (%c3, %c3)
// CHECK: scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
module attributes {kiln.tuned = {"cpu.matmul@31267c7f73e56079:matmul:f32,f32,f32:16x128x256" = "4x3"}} {
func.func @mm(%a: memref<13x200xf32>, %b: memref<200x150xf32>, %c: memref<13x150xf32>) {
  linalg.matmul ins(%a, %b : memref<13x200xf32>, memref<200x150xf32>) outs(%c : memref<13x150xf32>)
  return
}
}

// -----

// A config that is not one of the candidates is a warning, and the default
// (2 column blocks of 64, 2 row blocks of 6).
// CHECK: warning: tuned config '5x5' of cpu.matmul@31267c7f73e56079:matmul:f32,f32,f32:16x128x256 is not one of cpu.matmul's candidates; using the default
// CHECK-LABEL: func @stale
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = (%c0, %c0) to (%c2, %c2)
module attributes {kiln.tuned = {"cpu.matmul@31267c7f73e56079:matmul:f32,f32,f32:16x128x256" = "5x5"}} {
func.func @stale(%a: memref<13x200xf32>, %b: memref<200x150xf32>, %c: memref<13x150xf32>) {
  linalg.matmul ins(%a, %b : memref<13x200xf32>, memref<200x150xf32>) outs(%c : memref<13x150xf32>)
  return
}
}
