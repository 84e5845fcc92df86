func.func @main(%a0: tensor<4xf64>) -> tensor<4xf16> {
  %r = kiln.cast %a0 : tensor<4xf64> -> tensor<4xf16>
  return %r : tensor<4xf16>
}
