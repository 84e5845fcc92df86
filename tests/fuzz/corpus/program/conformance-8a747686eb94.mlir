func.func @main(%a0: tensor<4x37xi32>) -> tensor<4x37xi32> {
  %r = kiln.not %a0 : tensor<4x37xi32>
  return %r : tensor<4x37xi32>
}
