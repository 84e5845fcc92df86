func.func @main(%a0: tensor<3x5x37xf32>) -> tensor<1x5x1xf32> {
  %r = kiln.reduce_mean %a0 {dims = array<i64: 0, 2>, keep_dims = true} : tensor<3x5x37xf32> -> tensor<1x5x1xf32>
  return %r : tensor<1x5x1xf32>
}
