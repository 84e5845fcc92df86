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

// -----

// Slices and reshapes a kernel reads go into it: the kernel takes the whole
// tensor once (not a copy per slice), and nothing is left in the caller.
// CHECK-LABEL: func.func private @slices_kernel0
// CHECK-SAME: (%[[X:.*]]: tensor<16x16xf32>) -> tensor<8x8xf32>
// CHECK-DAG: tensor.extract_slice %[[X]][0, 0] [8, 8] [1, 1]
// CHECK-DAG: tensor.extract_slice %[[X]][1, 2] [8, 8] [1, 1]
// CHECK: linalg.generic
// CHECK-LABEL: func.func @slices
// CHECK-NOT: tensor.extract_slice
// CHECK: call @slices_kernel0(%{{.*}}) : (tensor<16x16xf32>)
func.func @slices(%x: tensor<16x16xf32>) -> tensor<8x8xf32> {
  %a = kiln.slice %x {start = array<i64: 0, 0>, stop = array<i64: 8, 8>, step = array<i64: 1, 1>} : tensor<16x16xf32> -> tensor<8x8xf32>
  %b = kiln.slice %x {start = array<i64: 1, 2>, stop = array<i64: 9, 10>, step = array<i64: 1, 1>} : tensor<16x16xf32> -> tensor<8x8xf32>
  %0 = kiln.add %a, %b : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

// The `?` sizes of a kernel's output come in as index arguments, and a `?`
// elementwise chain is one kernel, as a static one is.
// CHECK-LABEL: func.func private @dynamic_kernel0
// CHECK-SAME: (%{{.*}}: tensor<?x?xf32>, %{{.*}}: tensor<?xf32>, %[[D0:.*]]: index, %[[D1:.*]]: index)
// CHECK: tensor.empty(%[[D0]], %[[D1]])
// CHECK: arith.addf
// CHECK-NEXT: math.exp
// CHECK-NOT: @dynamic_kernel1
// CHECK-LABEL: func.func @dynamic
// CHECK: call @dynamic_kernel0(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (tensor<?x?xf32>, tensor<?xf32>, index, index)
// CHECK-NOT: call
func.func @dynamic(%a: tensor<?x?xf32>, %b: tensor<?xf32>) -> tensor<?x?xf32> {
  %0 = kiln.add %a, %b : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
  %1 = kiln.exp %0 : tensor<?x?xf32>
  return %1 : tensor<?x?xf32>
}
