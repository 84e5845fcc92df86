func.func @main(%a0: tensor<4x37xi1>) -> tensor<4x37xi1> {
  %r = kiln.not %a0 : tensor<4x37xi1>
  return %r : tensor<4x37xi1>
}
