func.func @main(%a0: tensor<8xf32>) -> tensor<8xi32> {
  %r = kiln.cast %a0 : tensor<8xf32> -> tensor<8xi32>
  return %r : tensor<8xi32>
}
