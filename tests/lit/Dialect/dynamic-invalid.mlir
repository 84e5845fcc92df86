// RUN: kiln-opt %s --split-input-file --verify-diagnostics
// What is known about `?` dims is still checked.

func.func @known_result(%x: tensor<?x4xf32>, %y: tensor<5x4xf32>) {
  // expected-error @+1 {{result has shape [6, 4], expected [5, 4]}}
  %a = kiln.add %x, %y : (tensor<?x4xf32>, tensor<5x4xf32>) -> tensor<6x4xf32>
  return
}

// -----

func.func @static_dims_differ(%x: tensor<?x4xf32>, %y: tensor<?x5xf32>) {
  // expected-error @+1 {{operands are not broadcast-compatible: lhs [?, 4] vs rhs [?, 5] (dim 0 from the right)}}
  %a = kiln.add %x, %y : (tensor<?x4xf32>, tensor<?x5xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @matmul_k(%a: tensor<?x4xf32>, %b: tensor<5x?xf32>) {
  // expected-error @+1 {{contraction sizes differ: a has 4 columns, b has 5 rows}}
  %m = kiln.matmul %a, %b : (tensor<?x4xf32>, tensor<5x?xf32>) -> tensor<?x?xf32>
  return
}

// -----

// A result `?` where the operands fix the size is a wrong result type (its
// lowering used never to end).
func.func @result_less_known_than_operands(%a: tensor<1000xf32>, %b: tensor<1000xf32>) {
  // expected-error @+1 {{result has shape [?], expected [1000]}}
  %r = kiln.add %a, %b : (tensor<1000xf32>, tensor<1000xf32>) -> tensor<?xf32>
  return
}

// -----

func.func @padding_that_overflows(%x: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{padded size of dim 0 overflows int64}}
  %0 = kiln.pad %x {low = array<i64: 9223372036854775807>, high = array<i64: 1>} : tensor<?xf32> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
