func.func @main(%a0: tensor<4x37xui8>) -> tensor<4x37xui8> {
  %r = kiln.not %a0 : tensor<4x37xui8>
  return %r : tensor<4x37xui8>
}
