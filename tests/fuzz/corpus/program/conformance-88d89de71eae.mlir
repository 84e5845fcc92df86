func.func @main(%a0: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %r = kiln.transpose %a0 {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  return %r : tensor<4x2x3xf32>
}
