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

// Buffers of run-time size: an expanded result's buffer is the out-param
// collapsed (at the block's start); a collapsed one's the out-param
// expanded to the buffer's sizes, where the buffer was (its sizes are
// defined there). (A `?` attention's [B, L, E] output before.)
// CHECK-LABEL: func @run_time_sizes
// CHECK-NEXT: %[[COLLAPSED:.*]] = memref.collapse_shape %arg2 {{\[}}[0, 1], [2], [3]] : memref<1x16x?x64xf16> into memref<16x?x64xf16>
// CHECK: linalg.fill ins(%{{.*}} : f16) outs(%[[COLLAPSED]] : memref<16x?x64xf16>)
// CHECK: %[[N:.*]] = memref.dim %arg1, %c0
// CHECK-NEXT: %[[EXPANDED:.*]] = memref.expand_shape %arg3 {{\[}}[0, 1]] output_shape [%[[N]], 6] : memref<?xf32> into memref<?x6xf32>
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[EXPANDED]] : memref<?x6xf32>)
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.copy
func.func @run_time_sizes(%x: f16, %in: memref<?x6xf32>, %out: memref<1x16x?x64xf16>, %out2: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %rows = memref.dim %in, %c0 : memref<?x6xf32>
  %buffer = memref.alloc(%rows) : memref<16x?x64xf16>
  linalg.fill ins(%x : f16) outs(%buffer : memref<16x?x64xf16>)
  %view = memref.expand_shape %buffer [[0, 1], [2], [3]] output_shape [1, 16, %rows, 64] : memref<16x?x64xf16> into memref<1x16x?x64xf16>
  %n = memref.dim %in, %c0 : memref<?x6xf32>
  %buffer2 = memref.alloc(%n) : memref<?x6xf32>
  %y = arith.extf %x : f16 to f32
  linalg.fill ins(%y : f32) outs(%buffer2 : memref<?x6xf32>)
  %view2 = memref.collapse_shape %buffer2 [[0, 1]] : memref<?x6xf32> into memref<?xf32>
  memref.copy %view, %out : memref<1x16x?x64xf16> to memref<1x16x?x64xf16>
  memref.copy %view2, %out2 : memref<?xf32> to memref<?xf32>
  return
}
