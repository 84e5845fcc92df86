func.func @main(%a0: tensor<2x1x5x8xf32>, %a1: tensor<3x8x4xf32>) -> tensor<2x3x5x4xf32> {
  %r = kiln.matmul %a0, %a1 : (tensor<2x1x5x8xf32>, tensor<3x8x4xf32>) -> tensor<2x3x5x4xf32>
  return %r : tensor<2x3x5x4xf32>
}
