func.func @main(%a0: tensor<3x5x37xi32>) -> tensor<1x5x1xi32> {
  %r = kiln.reduce_prod %a0 {dims = array<i64: 0, 2>, keep_dims = true} : tensor<3x5x37xi32> -> tensor<1x5x1xi32>
  return %r : tensor<1x5x1xi32>
}
