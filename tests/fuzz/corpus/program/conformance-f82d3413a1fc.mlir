func.func @main(%a0: tensor<7x33xf64>) -> tensor<7x33xf64> {
  %r = kiln.sqrt %a0 : tensor<7x33xf64>
  return %r : tensor<7x33xf64>
}
