func.func @main(%a0: tensor<4x9xi64>) -> tensor<4x9xi64> {
  %r = kiln.cumsum %a0 {dim = 1} : tensor<4x9xi64>
  return %r : tensor<4x9xi64>
}
