func.func @main(%a0: tensor<4xf32>) -> tensor<4xi1> {
  %r = kiln.cast %a0 : tensor<4xf32> -> tensor<4xi1>
  return %r : tensor<4xi1>
}
