func.func @main(%a0: tensor<7x16xi8>, %a1: tensor<16x150xi8>) -> tensor<7x150xi32> {
  %r = kiln.matmul %a0, %a1 : (tensor<7x16xi8>, tensor<16x150xi8>) -> tensor<7x150xi32>
  return %r : tensor<7x150xi32>
}
