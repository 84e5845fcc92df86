func.func @main(%a0: tensor<4x6xf32>, %a1: tensor<4x3xi64>, %a2: tensor<4x3xf32>) -> tensor<4x6xf32> {
  %r = kiln.scatter_add %a0, %a1, %a2 {dim = 1} : (tensor<4x6xf32>, tensor<4x3xi64>, tensor<4x3xf32>) -> tensor<4x6xf32>
  return %r : tensor<4x6xf32>
}
