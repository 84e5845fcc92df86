func.func @main(%a0: tensor<4xui8>) -> tensor<4xi32> {
  %r = kiln.cast %a0 : tensor<4xui8> -> tensor<4xi32>
  return %r : tensor<4xi32>
}
