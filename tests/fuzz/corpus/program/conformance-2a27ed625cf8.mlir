func.func @main(%a0: tensor<1x1xf32>, %a1: tensor<1x1xf32>) -> tensor<1x1xf32> {
  %r = kiln.matmul %a0, %a1 : (tensor<1x1xf32>, tensor<1x1xf32>) -> tensor<1x1xf32>
  return %r : tensor<1x1xf32>
}
