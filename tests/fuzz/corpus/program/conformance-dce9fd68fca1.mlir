func.func @main(%a0: tensor<5xf32>) -> tensor<5xi1> {
  %r = kiln.isnan %a0 : tensor<5xf32> -> tensor<5xi1>
  return %r : tensor<5xi1>
}
