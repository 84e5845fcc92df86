func.func @main(%a0: tensor<3x5x37xi32>) -> tensor<3x5xi32> {
  %r = kiln.reduce_prod %a0 {dims = array<i64: 2>} : tensor<3x5x37xi32> -> tensor<3x5xi32>
  return %r : tensor<3x5xi32>
}
