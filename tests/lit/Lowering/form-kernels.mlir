// RUN: kiln-opt %s --kiln-convert-to-linalg --kiln-form-kernels --split-input-file | FileCheck %s

// A chain of elementwise and movement ops becomes one kernel.
// CHECK-LABEL: func.func private @chain_kernel0
// CHECK-SAME: attributes {kiln.kernel}
// CHECK-COUNT-1: linalg.generic
// CHECK-NOT: linalg.generic
// CHECK: return
// CHECK-LABEL: func.func @chain
// CHECK-NEXT: %[[R:.*]] = call @chain_kernel0
// CHECK-NEXT: return %[[R]]
func.func @chain(%x: tensor<8x4xf32>, %w: tensor<4xf32>) -> tensor<4x8xf32> {
  %0 = kiln.mul %x, %w : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
  %1 = kiln.tanh %0 : tensor<8x4xf32>
  %2 = kiln.transpose %1 {perm = array<i64: 1, 0>} : tensor<8x4xf32> -> tensor<4x8xf32>
  %3 = kiln.exp %2 : tensor<4x8xf32>
  return %3 : tensor<4x8xf32>
}

// -----

// A reduction takes its elementwise producer as a prologue; its output fill
// stays in the same kernel.
// CHECK-LABEL: func.func private @sumexp_kernel0
// CHECK: linalg.fill
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction"]
// CHECK: math.exp
// CHECK: arith.addf
// CHECK-NOT: func.func private @sumexp_kernel1
func.func @sumexp(%x: tensor<8x4xf32>) -> tensor<8xf32> {
  %0 = kiln.exp %x : tensor<8x4xf32>
  %1 = kiln.reduce_sum %0 {dims = array<i64: 1>} : tensor<8x4xf32> -> tensor<8xf32>
  return %1 : tensor<8xf32>
}

// -----

// A value used twice is computed once, in its own kernel.
// CHECK-LABEL: func.func @shared
// CHECK-COUNT-3: call @shared_kernel
func.func @shared(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %0 = kiln.exp %x : tensor<16xf32>
  %1 = kiln.neg %0 : tensor<16xf32>
  %2 = kiln.sin %0 : tensor<16xf32>
  return %1, %2 : tensor<16xf32>, tensor<16xf32>
}
