func.func @main(%a0: tensor<4xf32>, %a1: tensor<4xf32>) -> tensor<4xf32> {
  %r = kiln.min %a0, %a1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
