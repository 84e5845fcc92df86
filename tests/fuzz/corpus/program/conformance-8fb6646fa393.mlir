func.func @main(%a0: tensor<4x37xi32>, %a1: tensor<37xi32>) -> tensor<4x37xi1> {
  %r = kiln.lt %a0, %a1 : (tensor<4x37xi32>, tensor<37xi32>) -> tensor<4x37xi1>
  return %r : tensor<4x37xi1>
}
