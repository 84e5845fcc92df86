func.func @main(%a0: tensor<3x5x37xf32>) -> tensor<3x5xf32> {
  %r = kiln.reduce_mean %a0 {dims = array<i64: 2>} : tensor<3x5x37xf32> -> tensor<3x5xf32>
  return %r : tensor<3x5xf32>
}
