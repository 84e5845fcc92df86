func.func @main(%a0: tensor<3x5x37xf16>) -> tensor<3x37xf16> {
  %r = kiln.reduce_mean %a0 {dims = array<i64: 1>} : tensor<3x5x37xf16> -> tensor<3x37xf16>
  return %r : tensor<3x37xf16>
}
