func.func @main(%a0: tensor<3x5x37xf32>) -> tensor<3x37xf32> {
  %r = kiln.reduce_sum %a0 {dims = array<i64: 1>} : tensor<3x5x37xf32> -> tensor<3x37xf32>
  return %r : tensor<3x37xf32>
}
