func.func @main(%a0: tensor<4x37xf32>, %a1: tensor<37xf32>) -> tensor<4x37xi1> {
  %r = kiln.gt %a0, %a1 : (tensor<4x37xf32>, tensor<37xf32>) -> tensor<4x37xi1>
  return %r : tensor<4x37xi1>
}
