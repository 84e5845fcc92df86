// RUN: kiln-opt %s --kiln-gpu-copies-to-linalg | FileCheck %s

// CHECK-LABEL: func @copy
// CHECK-NOT: memref.copy
// CHECK: linalg.copy ins(%{{.*}} : memref<4x3xf32, strided<[5, 1]>>) outs(%{{.*}} : memref<4x3xf32>)
func.func @copy(%a: memref<4x3xf32, strided<[5, 1]>>, %b: memref<4x3xf32>) {
  memref.copy %a, %b : memref<4x3xf32, strided<[5, 1]>> to memref<4x3xf32>
  return
}
