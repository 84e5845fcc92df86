func.func @main(%a0: tensor<5xf32>) -> tensor<5xf32> {
  %r = kiln.relu %a0 : tensor<5xf32>
  return %r : tensor<5xf32>
}
