func.func @main(%a0: tensor<9x5xi64>) -> tensor<9x5xi64> {
  %r = kiln.abs %a0 : tensor<9x5xi64>
  return %r : tensor<9x5xi64>
}
