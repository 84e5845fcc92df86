func.func @main(%a0: tensor<6x7xui8>, %a1: tensor<7xui8>) -> tensor<6x7xui8> {
  %r = kiln.div %a0, %a1 : (tensor<6x7xui8>, tensor<7xui8>) -> tensor<6x7xui8>
  return %r : tensor<6x7xui8>
}
