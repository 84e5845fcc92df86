func.func @main(%a0: tensor<3x1x5xf32>, %a1: tensor<4x5xf32>) -> tensor<3x4x5xf32> {
  %r = kiln.pow %a0, %a1 : (tensor<3x1x5xf32>, tensor<4x5xf32>) -> tensor<3x4x5xf32>
  return %r : tensor<3x4x5xf32>
}
