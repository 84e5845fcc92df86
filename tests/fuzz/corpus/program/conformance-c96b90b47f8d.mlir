func.func @main(%a0: tensor<2xi1>) -> tensor<2xf32> {
  %r = kiln.cast %a0 : tensor<2xi1> -> tensor<2xf32>
  return %r : tensor<2xf32>
}
