func.func @main(%a0: tensor<5x8xui8>, %a1: tensor<5x8xui8>) -> tensor<5x8xui8> {
  %r = kiln.or %a0, %a1 : (tensor<5x8xui8>, tensor<5x8xui8>) -> tensor<5x8xui8>
  return %r : tensor<5x8xui8>
}
