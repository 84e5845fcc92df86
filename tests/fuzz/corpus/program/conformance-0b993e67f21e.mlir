func.func @main(%a0: tensor<4x6xf32>, %a1: tensor<3xi32>) -> tensor<3x6xf32> {
  %r = kiln.index_select %a0, %a1 {dim = 0} : (tensor<4x6xf32>, tensor<3xi32>) -> tensor<3x6xf32>
  return %r : tensor<3x6xf32>
}
