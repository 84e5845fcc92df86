// RUN: kiln-opt %s --kiln-reshaped-results | FileCheck %s

// The result was a reshape of a local buffer: the buffer becomes the
// out-param seen through the inverse reshape (at the block's start, so it
// separates no ops that were adjacent); the copy and the deallocation go.
// CHECK-LABEL: func @expanded
// CHECK-NEXT: %[[VIEW:.*]] = memref.collapse_shape %arg1 {{\[}}[0], [1], [2, 3]] : memref<2x8x3x3xf32> into memref<2x8x9xf32>
// CHECK-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%[[VIEW]] : memref<2x8x9xf32>)
// CHECK-NEXT: return
func.func @expanded(%x: f32, %out: memref<2x8x3x3xf32>) {
  %buffer = memref.alloc() : memref<2x8x9xf32>
  linalg.fill ins(%x : f32) outs(%buffer : memref<2x8x9xf32>)
  %view = memref.expand_shape %buffer [[0], [1], [2, 3]] output_shape [2, 8, 3, 3] : memref<2x8x9xf32> into memref<2x8x3x3xf32>
  memref.copy %view, %out : memref<2x8x3x3xf32> to memref<2x8x3x3xf32>
  memref.dealloc %buffer : memref<2x8x9xf32>
  return
}

// A collapsed result: the buffer is the out-param expanded.
// CHECK-LABEL: func @collapsed
// CHECK-NEXT: %[[VIEW:.*]] = memref.expand_shape %arg1 {{\[}}[0, 1]] output_shape [4, 6] : memref<24xf32> into memref<4x6xf32>
// CHECK-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%[[VIEW]] : memref<4x6xf32>)
// CHECK-NEXT: return
func.func @collapsed(%x: f32, %out: memref<24xf32>) {
  %buffer = memref.alloc() : memref<4x6xf32>
  linalg.fill ins(%x : f32) outs(%buffer : memref<4x6xf32>)
  %view = memref.collapse_shape %buffer [[0, 1]] : memref<4x6xf32> into memref<24xf32>
  memref.copy %view, %out : memref<24xf32> to memref<24xf32>
  return
}

// Kept: the buffer is an argument (not the function's own), the out-param
// is read elsewhere, the buffer is written after the copy.
// CHECK-LABEL: func @kept
// CHECK-COUNT-3: memref.copy
func.func @kept(%x: f32, %in: memref<4x6xf32>, %out: memref<24xf32>, %out2: memref<24xf32>, %out3: memref<24xf32>) {
  %view = memref.collapse_shape %in [[0, 1]] : memref<4x6xf32> into memref<24xf32>
  memref.copy %view, %out : memref<24xf32> to memref<24xf32>
  %buffer = memref.alloc() : memref<4x6xf32>
  %view2 = memref.collapse_shape %buffer [[0, 1]] : memref<4x6xf32> into memref<24xf32>
  memref.copy %view2, %out2 : memref<24xf32> to memref<24xf32>
  linalg.fill ins(%x : f32) outs(%buffer : memref<4x6xf32>)
  %view3 = memref.collapse_shape %buffer [[0, 1]] : memref<4x6xf32> into memref<24xf32>
  linalg.fill ins(%x : f32) outs(%out3 : memref<24xf32>)
  memref.copy %view3, %out3 : memref<24xf32> to memref<24xf32>
  return
}
