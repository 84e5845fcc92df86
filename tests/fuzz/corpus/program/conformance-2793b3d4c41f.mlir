func.func @main(%a0: tensor<2x3x4xf32>) -> tensor<5x2x3x4xf32> {
  %r = kiln.broadcast %a0 : tensor<2x3x4xf32> -> tensor<5x2x3x4xf32>
  return %r : tensor<5x2x3x4xf32>
}
