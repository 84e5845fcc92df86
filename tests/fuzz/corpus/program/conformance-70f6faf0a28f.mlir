func.func @main(%a0: tensor<3x13x20xf32>, %a1: tensor<3x20x70xf32>) -> tensor<3x13x70xf32> {
  %r = kiln.matmul %a0, %a1 : (tensor<3x13x20xf32>, tensor<3x20x70xf32>) -> tensor<3x13x70xf32>
  return %r : tensor<3x13x70xf32>
}
