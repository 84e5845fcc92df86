func.func @main(%a0: tensor<6xf32>) -> tensor<6xui8> {
  %r = kiln.cast %a0 : tensor<6xf32> -> tensor<6xui8>
  return %r : tensor<6xui8>
}
