// RUN: kiln-opt %s --kiln-cpu-fill-borders --split-input-file | FileCheck %s

// A pad: the fill writes the rows above and below the copy's view, then
// the columns left and right of it within the view's rows.
// CHECK-LABEL: func @pad
// CHECK-NOT: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : memref<6x12xf32>)
// CHECK: %[[TOP:.*]] = memref.subview %[[OUT:.*]][0, 0] [1, 12] [1, 1]
// CHECK: linalg.fill ins(%[[V:.*]] : f32) outs(%[[TOP]]
// CHECK: %[[BOTTOM:.*]] = memref.subview %[[OUT]][5, 0] [1, 12] [1, 1]
// CHECK: linalg.fill ins(%[[V]] : f32) outs(%[[BOTTOM]]
// CHECK: %[[LEFT:.*]] = memref.subview %[[OUT]][1, 0] [4, 2] [1, 1]
// CHECK: linalg.fill ins(%[[V]] : f32) outs(%[[LEFT]]
// CHECK: %[[RIGHT:.*]] = memref.subview %[[OUT]][1, 10] [4, 2] [1, 1]
// CHECK: linalg.fill ins(%[[V]] : f32) outs(%[[RIGHT]]
// CHECK: %[[VIEW:.*]] = memref.subview %[[OUT]][1, 2] [4, 8] [1, 1]
// CHECK: memref.copy %{{.*}}, %[[VIEW]]
func.func @pad(%x: memref<4x8xf32>, %out: memref<6x12xf32>) {
  %v = arith.constant 1.0 : f32
  linalg.fill ins(%v : f32) outs(%out : memref<6x12xf32>)
  %view = memref.subview %out[1, 2] [4, 8] [1, 1] : memref<6x12xf32> to memref<4x8xf32, strided<[12, 1], offset: 14>>
  memref.copy %x, %view : memref<4x8xf32> to memref<4x8xf32, strided<[12, 1], offset: 14>>
  return
}

// -----

// Run-time sizes: the slab after the view ends at the buffer's size (2n
// rows: n after the view's n); no slab before a view at offset 0.
// CHECK-LABEL: func @run_time
// CHECK-SAME: (%[[X:.*]]: memref<?x8xf32>, %[[N:.*]]: index)
// CHECK: %[[OUT:.*]] = memref.alloc
// CHECK: %[[BELOW:.*]] = memref.subview %[[OUT]][%[[N]], 0] [%[[N]], 9] [1, 1]
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[BELOW]]
// CHECK: %[[RIGHT:.*]] = memref.subview %[[OUT]][0, 8] [%[[N]], 1] [1, 1]
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[RIGHT]]
// CHECK-NOT: linalg.fill
func.func @run_time(%x: memref<?x8xf32>, %n: index) -> memref<?x9xf32> {
  %v = arith.constant 0.0 : f32
  %m = arith.addi %n, %n : index
  %out = memref.alloc(%m) : memref<?x9xf32>
  linalg.fill ins(%v : f32) outs(%out : memref<?x9xf32>)
  %view = memref.subview %out[0, 0] [%n, 8] [1, 1] : memref<?x9xf32> to memref<?x8xf32, strided<[9, 1]>>
  memref.copy %x, %view : memref<?x8xf32> to memref<?x8xf32, strided<[9, 1]>>
  return %out : memref<?x9xf32>
}

// -----

// Left alone: a read of the buffer between the fill and the copy, a copy
// into a strided view, and a fill followed by no copy.
// CHECK-LABEL: func @untouched
// CHECK-COUNT-3: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : memref<6x12xf32>)
func.func @untouched(%x: memref<4x8xf32>, %out: memref<6x12xf32>, %y: memref<6x12xf32>, %z: memref<6x12xf32>, %s: memref<3x6xf32>) {
  %v = arith.constant 1.0 : f32
  linalg.fill ins(%v : f32) outs(%out : memref<6x12xf32>)
  memref.copy %out, %y : memref<6x12xf32> to memref<6x12xf32>
  %view = memref.subview %out[1, 2] [4, 8] [1, 1] : memref<6x12xf32> to memref<4x8xf32, strided<[12, 1], offset: 14>>
  memref.copy %x, %view : memref<4x8xf32> to memref<4x8xf32, strided<[12, 1], offset: 14>>
  linalg.fill ins(%v : f32) outs(%y : memref<6x12xf32>)
  %every2 = memref.subview %y[0, 0] [3, 6] [2, 2] : memref<6x12xf32> to memref<3x6xf32, strided<[24, 2]>>
  memref.copy %s, %every2 : memref<3x6xf32> to memref<3x6xf32, strided<[24, 2]>>
  linalg.fill ins(%v : f32) outs(%z : memref<6x12xf32>)
  return
}
