func.func @main(%a0: tensor<4xi64>) -> tensor<4xi8> {
  %r = kiln.cast %a0 : tensor<4xi64> -> tensor<4xi8>
  return %r : tensor<4xi8>
}
