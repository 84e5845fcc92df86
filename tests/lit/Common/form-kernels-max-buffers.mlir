// RUN: kiln-opt %s --kiln-convert-to-linalg --kiln-form-kernels="max-buffers=4" | FileCheck %s
// RUN: kiln-opt %s --kiln-convert-to-linalg --kiln-form-kernels | FileCheck %s --check-prefix=ONE

// A chain over 5 inputs would be one kernel of 6 tensors; with at most 4 a
// kernel it is split (Vulkan: maxPerStageDescriptorStorageBuffers), and
// slices of one tensor count once.
// CHECK-LABEL: func.func private @chain_kernel0
// CHECK-SAME: (%{{[a-z0-9]+}}: tensor<4xf32>, %{{[a-z0-9]+}}: tensor<4xf32>, %{{[a-z0-9]+}}: tensor<4xf32>) -> tensor<4xf32>
// CHECK-LABEL: func.func private @chain_kernel1
// CHECK-SAME: (%{{[a-z0-9]+}}: tensor<4xf32>, %{{[a-z0-9]+}}: tensor<4xf32>, %{{[a-z0-9]+}}: tensor<4xf32>) -> tensor<4xf32>
// CHECK-LABEL: func.func @chain
// CHECK-COUNT-2: call @chain_kernel
// ONE-LABEL: func.func private @chain_kernel0
// ONE-SAME: (%{{[a-z0-9]+}}: tensor<4xf32>, %{{[a-z0-9]+}}: tensor<4xf32>, %{{[a-z0-9]+}}: tensor<4xf32>, %{{[a-z0-9]+}}: tensor<4xf32>, %{{[a-z0-9]+}}: tensor<4xf32>)
// ONE-NOT: @chain_kernel1
func.func @chain(%a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<4xf32>, %d: tensor<4xf32>, %e: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = kiln.add %0, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = kiln.add %1, %d : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %3 = kiln.add %2, %e : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %3 : tensor<4xf32>
}

// CHECK-LABEL: func.func private @slices_kernel0
// CHECK-SAME: (%{{[a-z0-9]+}}: tensor<16xf32>, %{{[a-z0-9]+}}: tensor<4xf32>) -> tensor<4xf32>
// CHECK-NOT: func.func private @slices_kernel1
func.func @slices(%x: tensor<16xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %s0 = kiln.slice %x {start = array<i64: 0>, stop = array<i64: 4>, step = array<i64: 1>} : tensor<16xf32> -> tensor<4xf32>
  %s1 = kiln.slice %x {start = array<i64: 4>, stop = array<i64: 8>, step = array<i64: 1>} : tensor<16xf32> -> tensor<4xf32>
  %s2 = kiln.slice %x {start = array<i64: 8>, stop = array<i64: 12>, step = array<i64: 1>} : tensor<16xf32> -> tensor<4xf32>
  %0 = kiln.add %s0, %s1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = kiln.add %0, %s2 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = kiln.add %1, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %2 : tensor<4xf32>
}
