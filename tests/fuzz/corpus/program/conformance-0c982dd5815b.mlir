func.func @main(%a0: tensor<9x5xi32>) -> tensor<9x5xi32> {
  %r = kiln.abs %a0 : tensor<9x5xi32>
  return %r : tensor<9x5xi32>
}
