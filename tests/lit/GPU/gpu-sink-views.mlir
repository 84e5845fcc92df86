// RUN: kiln-opt %s --kiln-gpu-sink-views | FileCheck %s

// Two slices of one buffer: both are cloned into the launch, so the kernel
// outlined from it takes %in once (not once per slice).
// CHECK-LABEL: func.func @two_slices
// CHECK: gpu.launch
// CHECK-DAG: memref.subview %[[IN:.*]][0] [4] [1]
// CHECK-DAG: memref.subview %[[IN]][4] [4] [1]
// CHECK: gpu.terminator
func.func @two_slices(%in: memref<8xf32>, %out: memref<4xf32>) {
  %c1 = arith.constant 1 : index
  %a = memref.subview %in[0] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1]>>
  %b = memref.subview %in[4] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: 4>>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %x = memref.load %a[%tx] : memref<4xf32, strided<[1]>>
    %y = memref.load %b[%tx] : memref<4xf32, strided<[1], offset: 4>>
    %s = arith.addf %x, %y : f32
    memref.store %s, %out[%tx] : memref<4xf32>
    gpu.terminator
  }
  return
}

// A chain of slices is cloned whole; a reshape stays an argument.
// CHECK-LABEL: func.func @chain
// CHECK: %[[E:.*]] = memref.expand_shape
// CHECK: gpu.launch
// CHECK: %[[S:.*]] = memref.subview %{{.*}}[1, 0] [2, 8] [1, 1]
// CHECK: memref.subview %[[S]][0, 4] [2, 4] [1, 1]
// CHECK: vector.load
// CHECK: memref.load %[[E]]
func.func @chain(%in: memref<4x8xf32>, %flat: memref<8xf32>, %out: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %s = memref.subview %in[1, 0] [2, 8] [1, 1] : memref<4x8xf32> to memref<2x8xf32, strided<[8, 1], offset: 8>>
  %t = memref.subview %s[0, 4] [2, 4] [1, 1] : memref<2x8xf32, strided<[8, 1], offset: 8>> to memref<2x4xf32, strided<[8, 1], offset: 12>>
  %e = memref.expand_shape %flat [[0, 1]] output_shape [2, 4] : memref<8xf32> into memref<2x4xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %v = vector.load %t[%c0, %c0] : memref<2x4xf32, strided<[8, 1], offset: 12>>, vector<4xf32>
    %x = memref.load %e[%c0, %c0] : memref<2x4xf32>
    vector.store %v, %out[%c0] : memref<8xf32>, vector<4xf32>
    memref.store %x, %out[%c1] : memref<8xf32>
    gpu.terminator
  }
  return
}

// A view passed to anything but an access stays a kernel argument.
// CHECK-LABEL: func.func @other_use
// CHECK: %[[V:.*]] = memref.subview
// CHECK: gpu.launch
// CHECK-NOT: memref.subview
// CHECK: memref.copy %[[V]]
func.func @other_use(%in: memref<8xf32>, %out: memref<4xf32>) {
  %c1 = arith.constant 1 : index
  %a = memref.subview %in[0] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1]>>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    memref.copy %a, %out : memref<4xf32, strided<[1]>> to memref<4xf32>
    gpu.terminator
  }
  return
}

// A reshape of a slice keeps the slice's strides (`?` ones where the
// buffer has a `?` dim, which a SPIR-V kernel argument cannot have): it is
// cloned in with its slice; a reshape of a whole buffer stays an argument.
// CHECK-LABEL: func.func @reshaped_slice
// CHECK: %[[E:.*]] = memref.expand_shape %arg2
// CHECK: gpu.launch
// CHECK: %[[S:.*]] = memref.subview %arg0[6, 6, 7] [1, 1, 2] [1, 1, 2]
// CHECK: %[[C:.*]] = memref.collapse_shape %[[S]]
// CHECK: memref.load %[[C]]
// CHECK: memref.load %[[E]]
func.func @reshaped_slice(%in: memref<7x?x16xf32>, %out: memref<2xf32>, %flat: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %s = memref.subview %in[6, 6, 7] [1, 1, 2] [1, 1, 2] : memref<7x?x16xf32> to memref<1x1x2xf32, strided<[?, 16, 2], offset: ?>>
  %c = memref.collapse_shape %s [[0, 1], [2]] : memref<1x1x2xf32, strided<[?, 16, 2], offset: ?>> into memref<1x2xf32, strided<[?, 2], offset: ?>>
  %e = memref.expand_shape %flat [[0, 1]] output_shape [2, 2] : memref<4xf32> into memref<2x2xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %x = memref.load %c[%c0, %tx] : memref<1x2xf32, strided<[?, 2], offset: ?>>
    %y = memref.load %e[%c0, %tx] : memref<2x2xf32>
    %z = arith.addf %x, %y : f32
    memref.store %z, %out[%tx] : memref<2xf32>
    gpu.terminator
  }
  return
}
