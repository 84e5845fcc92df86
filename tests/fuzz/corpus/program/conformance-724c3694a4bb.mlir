func.func @main(%a0: tensor<3x5x37xf16>) -> tensor<3x5xf16> {
  %r = kiln.reduce_mean %a0 {dims = array<i64: 2>} : tensor<3x5x37xf16> -> tensor<3x5xf16>
  return %r : tensor<3x5xf16>
}
