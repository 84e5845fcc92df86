// RUN: kiln-opt %s --canonicalize --split-input-file | FileCheck %s
// Folders of ops that leave their operand unchanged.

// CHECK-LABEL: func @identities
// CHECK-SAME: (%[[X:.*]]: tensor<4x1xf32>)
// CHECK-NEXT: return %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]]
func.func @identities(%x: tensor<4x1xf32>) -> (tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>) {
  %0 = kiln.reshape %x : tensor<4x1xf32> -> tensor<4x1xf32>
  %1 = kiln.broadcast %x : tensor<4x1xf32> -> tensor<4x1xf32>
  %2 = kiln.transpose %x {perm = array<i64: 0, 1>} : tensor<4x1xf32> -> tensor<4x1xf32>
  %3 = kiln.cast %x : tensor<4x1xf32> -> tensor<4x1xf32>
  %4 = kiln.slice %x {start = array<i64: 0, 0>, stop = array<i64: 4, 1>} : tensor<4x1xf32> -> tensor<4x1xf32>
  %5 = kiln.flip %x {dims = array<i64: 1>} : tensor<4x1xf32> -> tensor<4x1xf32>
  %6 = kiln.pad %x {low = array<i64: 0, 0>, high = array<i64: 0, 0>} : tensor<4x1xf32> -> tensor<4x1xf32>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>
}

// -----

// A reshape of a reshape reshapes the original once; real changes stay.
// CHECK-LABEL: func @chains
// CHECK-SAME: (%[[X:.*]]: tensor<2x6xf32>)
// CHECK-NEXT: %[[R:.*]] = kiln.reshape %[[X]] : tensor<2x6xf32> -> tensor<3x4xf32>
// CHECK-NEXT: %[[F:.*]] = kiln.flip %[[R]] {dims = array<i64: 0>}
// CHECK-NEXT: return %[[X]], %[[F]]
func.func @chains(%x: tensor<2x6xf32>) -> (tensor<2x6xf32>, tensor<3x4xf32>) {
  %0 = kiln.reshape %x : tensor<2x6xf32> -> tensor<12xf32>
  %1 = kiln.reshape %0 : tensor<12xf32> -> tensor<2x6xf32>
  %2 = kiln.reshape %0 : tensor<12xf32> -> tensor<3x4xf32>
  %3 = kiln.flip %2 {dims = array<i64: 0>} : tensor<3x4xf32> -> tensor<3x4xf32>
  return %1, %3 : tensor<2x6xf32>, tensor<3x4xf32>
}

// -----

// A `?` dim padded is `?` again: one type on both sides, but no identity.
// CHECK-LABEL: func @padded_run_time_dim
// CHECK: %[[P:.*]] = kiln.pad
// CHECK-NEXT: return %[[P]]
func.func @padded_run_time_dim(%x: tensor<?x3xf32>) -> tensor<?x3xf32> {
  %0 = kiln.pad %x {low = array<i64: 1, 0>, high = array<i64: 0, 0>} : tensor<?x3xf32> -> tensor<?x3xf32>
  return %0 : tensor<?x3xf32>
}

// -----

// A `?` operand with a static result type keeps its op (the folded value
// would have another type).
// CHECK-LABEL: func @static_results_of_run_time_operands
// CHECK: kiln.pad
// CHECK: kiln.transpose
// CHECK: kiln.flip
func.func @static_results_of_run_time_operands(%x: tensor<?x4xf32>, %y: tensor<?x1xf32>) -> (tensor<5x4xf32>, tensor<5x4xf32>, tensor<5x1xf32>) {
  %0 = kiln.pad %x {low = array<i64: 0, 0>, high = array<i64: 0, 0>} : tensor<?x4xf32> -> tensor<5x4xf32>
  %1 = kiln.transpose %x {perm = array<i64: 0, 1>} : tensor<?x4xf32> -> tensor<5x4xf32>
  %2 = kiln.flip %y {dims = array<i64: 1>} : tensor<?x1xf32> -> tensor<5x1xf32>
  return %0, %1, %2 : tensor<5x4xf32>, tensor<5x4xf32>, tensor<5x1xf32>
}
