func.func @main(%a0: tensor<7x100xf32>, %a1: tensor<100x150xf32>) -> tensor<7x150xf32> {
  %r = kiln.matmul %a0, %a1 : (tensor<7x100xf32>, tensor<100x150xf32>) -> tensor<7x150xf32>
  return %r : tensor<7x150xf32>
}
