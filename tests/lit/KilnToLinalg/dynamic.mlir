// RUN: kiln-opt %s --kiln-convert-to-linalg --split-input-file --verify-diagnostics | FileCheck %s
// `?` dims: result tensors take their sizes from the operands (tensor.dim),
// counts are run-time values, and ops outside the slice are named.

// CHECK-LABEL: func @add
// CHECK: %[[D0:.*]] = tensor.dim %arg0, %c0 : tensor<?x?xf32>
// CHECK: %[[D1:.*]] = tensor.dim %arg0, %c1 : tensor<?x?xf32>
// CHECK: tensor.empty(%[[D0]], %[[D1]]) : tensor<?x?xf32>
// CHECK: linalg.generic
func.func @add(%a: tensor<?x?xf32>, %b: tensor<?xf32>) -> tensor<?x?xf32> {
  %0 = kiln.add %a, %b : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// The mean divides by the reduced dim's run-time size; keep_dims expands
// with the `?` dim in a group of its own.
// CHECK-LABEL: func @mean
// CHECK: %[[N:.*]] = tensor.dim %arg0, %c1 : tensor<?x?xf32>
// CHECK: %[[I:.*]] = arith.index_castui %[[N]] : index to i64
// CHECK: arith.uitofp %[[I]] : i64 to f32
// CHECK: arith.divf
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1]] output_shape
func.func @mean(%x: tensor<?x?xf32>) -> tensor<?x1xf32> {
  %0 = kiln.reduce_mean %x {dims = array<i64: 1>, keep_dims = true} : tensor<?x?xf32> -> tensor<?x1xf32>
  return %0 : tensor<?x1xf32>
}

// -----

// CHECK-LABEL: func @matmul
// CHECK-DAG: %[[M:.*]] = tensor.dim %arg0, %c0
// CHECK-DAG: %[[N:.*]] = tensor.dim %arg1, %c1
// CHECK: tensor.empty(%[[M]], %[[N]]) : tensor<?x?xf32>
// CHECK: linalg.matmul
func.func @matmul(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %0 = kiln.matmul %a, %b : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @cumsum(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'kiln.cumsum' with dynamic dims ('tensor<?x8xf32>') is not supported yet}}
  %0 = kiln.cumsum %x {dim = 1} : tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}
