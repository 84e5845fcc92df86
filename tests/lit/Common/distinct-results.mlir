// RUN: kiln-opt %s --kiln-distinct-results | FileCheck %s

// The second and third occurrences of %0 return copies; %1 is left alone.
// CHECK-LABEL: func @twice
// CHECK: %[[A:.*]] = memref.alloc() : memref<4xf32>
// CHECK: %[[B:.*]] = memref.alloc() : memref<2xi8>
// CHECK: %[[C1:.*]] = memref.alloc() : memref<4xf32>
// CHECK: memref.copy %[[A]], %[[C1]]
// CHECK: %[[C2:.*]] = memref.alloc() : memref<4xf32>
// CHECK: memref.copy %[[A]], %[[C2]]
// CHECK: return %[[A]], %[[C1]], %[[B]], %[[C2]]
func.func @twice() -> (memref<4xf32>, memref<4xf32>, memref<2xi8>, memref<4xf32>) {
  %0 = memref.alloc() : memref<4xf32>
  %1 = memref.alloc() : memref<2xi8>
  return %0, %0, %1, %0 : memref<4xf32>, memref<4xf32>, memref<2xi8>, memref<4xf32>
}

// An argument returned twice is copied too.
// CHECK-LABEL: func @argument
// CHECK: %[[C:.*]] = memref.alloc() : memref<3xi32>
// CHECK: memref.copy %arg0, %[[C]]
// CHECK: return %arg0, %[[C]]
func.func @argument(%a: memref<3xi32>) -> (memref<3xi32>, memref<3xi32>) {
  return %a, %a : memref<3xi32>, memref<3xi32>
}

// A copy of a buffer of run-time sizes takes them from it (the alloc had no
// sizes: invalid IR for every `?` program that returned a value twice).
// CHECK-LABEL: func @run_time_sizes
// CHECK: %[[D0:.*]] = memref.dim %arg0, %c0
// CHECK: %[[D2:.*]] = memref.dim %arg0, %c2
// CHECK: %[[C:.*]] = memref.alloc(%[[D0]], %[[D2]]) : memref<?x4x?xf32>
// CHECK: memref.copy %arg0, %[[C]]
// CHECK: return %arg0, %[[C]]
func.func @run_time_sizes(%a: memref<?x4x?xf32>) -> (memref<?x4x?xf32>, memref<?x4x?xf32>) {
  return %a, %a : memref<?x4x?xf32>, memref<?x4x?xf32>
}
