func.func @main(%a0: tensor<4x9xf16>) -> tensor<4x9xf16> {
  %r = kiln.cumsum %a0 {dim = 0} : tensor<4x9xf16>
  return %r : tensor<4x9xf16>
}
