func.func @main(%a0: tensor<4x37xui8>, %a1: tensor<37xui8>) -> tensor<4x37xi1> {
  %r = kiln.ge %a0, %a1 : (tensor<4x37xui8>, tensor<37xui8>) -> tensor<4x37xi1>
  return %r : tensor<4x37xi1>
}
