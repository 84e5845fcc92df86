func.func @main(%a0: tensor<2x3x4xf32>) -> tensor<4x6xf32> {
  %r = kiln.reshape %a0 : tensor<2x3x4xf32> -> tensor<4x6xf32>
  return %r : tensor<4x6xf32>
}
