func.func @main(%a0: tensor<3x5x37xf16>) -> tensor<1x5x1xf16> {
  %r = kiln.reduce_min %a0 {dims = array<i64: 0, 2>, keep_dims = true} : tensor<3x5x37xf16> -> tensor<1x5x1xf16>
  return %r : tensor<1x5x1xf16>
}
