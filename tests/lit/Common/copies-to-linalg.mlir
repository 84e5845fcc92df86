// RUN: kiln-opt %s --kiln-copies-to-linalg | FileCheck %s
// RUN: kiln-opt %s --kiln-copies-to-linalg=generic=true | FileCheck %s --check-prefix=GENERIC

// CHECK-LABEL: func @copy
// CHECK-NOT: memref.copy
// CHECK: linalg.copy ins(%{{.*}} : memref<4x3xf32, strided<[5, 1]>>) outs(%{{.*}} : memref<4x3xf32>)

// GENERIC-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// GENERIC-LABEL: func @copy
// GENERIC-NOT: memref.copy
// GENERIC: linalg.generic {indexing_maps = [#[[ID]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// GENERIC-SAME: ins(%{{.*}} : memref<4x3xf32, strided<[5, 1]>>) outs(%{{.*}} : memref<4x3xf32>)
// GENERIC-NEXT: ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
// GENERIC-NEXT: linalg.yield %[[IN]] : f32
func.func @copy(%a: memref<4x3xf32, strided<[5, 1]>>, %b: memref<4x3xf32>) {
  memref.copy %a, %b : memref<4x3xf32, strided<[5, 1]>> to memref<4x3xf32>
  return
}

// A rank-0 copy has no loops.
// GENERIC-LABEL: func @scalar
// GENERIC: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}], iterator_types = []}
func.func @scalar(%a: memref<i8>, %b: memref<i8>) {
  memref.copy %a, %b : memref<i8> to memref<i8>
  return
}
