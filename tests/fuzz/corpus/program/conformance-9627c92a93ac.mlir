func.func @main(%a0: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %r = kiln.flip %a0 {dims = array<i64: 0, 2>} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  return %r : tensor<2x3x4xf32>
}
