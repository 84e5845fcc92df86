func.func @main(%a0: tensor<64x128xf32>, %a1: tensor<128x96xf32>) -> tensor<64x96xf32> {
  %r = kiln.matmul %a0, %a1 : (tensor<64x128xf32>, tensor<128x96xf32>) -> tensor<64x96xf32>
  return %r : tensor<64x96xf32>
}
