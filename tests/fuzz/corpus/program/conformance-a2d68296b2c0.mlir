func.func @main(%a0: tensor<3x1x5xf64>, %a1: tensor<4x5xf64>) -> tensor<3x4x5xf64> {
  %r = kiln.pow %a0, %a1 : (tensor<3x1x5xf64>, tensor<4x5xf64>) -> tensor<3x4x5xf64>
  return %r : tensor<3x4x5xf64>
}
