func.func @main(%a0: tensor<4x6xf32>, %a1: tensor<4x3xi64>) -> tensor<4x3xf32> {
  %r = kiln.gather %a0, %a1 {dim = 1} : (tensor<4x6xf32>, tensor<4x3xi64>) -> tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}
