func.func @main(%a0: tensor<4x6xi8>, %a1: tensor<6x3xi8>) -> tensor<4x3xi32> {
  %r = kiln.matmul %a0, %a1 : (tensor<4x6xi8>, tensor<6x3xi8>) -> tensor<4x3xi32>
  return %r : tensor<4x3xi32>
}
