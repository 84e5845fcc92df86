// RUN: kiln-opt %s --kiln-cpu-expand-run-time-shapes | FileCheck %s
// RUN: kiln-opt %s --kiln-cpu-expand-run-time-shapes --expand-strided-metadata | FileCheck %s --check-prefix=META

// A group of two `?` dims (a pixel count split into height and width)
// becomes a reinterpret_cast: each dim's stride the next one's times its
// size, the group's last the source dim's; expand-strided-metadata, which
// crashes on the expansion itself, then takes it.
// CHECK-LABEL: func @pixels
// CHECK: %[[BASE:.*]], %[[OFFSET:.*]], %[[SIZES:.*]]:3, %[[STRIDES:.*]]:3 = memref.extract_strided_metadata %arg0
// CHECK: memref.reinterpret_cast %[[BASE]] to offset: [0], sizes: [%arg3, 4, %arg1, %arg2], strides: [%[[STRIDES]]#0, %[[STRIDES]]#1, %arg2, 1]
// CHECK-NOT: memref.expand_shape
// META-LABEL: func @pixels
// META: memref.reinterpret_cast
func.func @pixels(%t: memref<?x4x?xf32>, %h: index, %w: index, %n: index) -> memref<?x4x?x?xf32> {
  %e = memref.expand_shape %t [[0], [1], [2, 3]] output_shape [%n, 4, %h, %w] : memref<?x4x?xf32> into memref<?x4x?x?xf32>
  return %e : memref<?x4x?x?xf32>
}

// A group of one `?` dim stays an expand_shape.
// CHECK-LABEL: func @one_run_time_size
// CHECK: memref.expand_shape
func.func @one_run_time_size(%t: memref<?x32xf32>, %n: index) -> memref<?x4x8xf32> {
  %e = memref.expand_shape %t [[0], [1, 2]] output_shape [%n, 4, 8] : memref<?x32xf32> into memref<?x4x8xf32>
  return %e : memref<?x4x8xf32>
}
