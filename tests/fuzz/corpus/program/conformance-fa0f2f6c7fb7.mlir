func.func @main(%a0: tensor<4x1xi1>, %a1: tensor<4x6xf32>, %a2: tensor<6xf32>) -> tensor<4x6xf32> {
  %r = kiln.select %a0, %a1, %a2 : (tensor<4x1xi1>, tensor<4x6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
  return %r : tensor<4x6xf32>
}
