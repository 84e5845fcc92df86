func.func @main(%a0: tensor<4x9xf32>) -> tensor<4x9xf32> {
  %r = kiln.cumsum %a0 {dim = 0} : tensor<4x9xf32>
  return %r : tensor<4x9xf32>
}
