func.func @main(%a0: tensor<3x0xf32>) -> tensor<3xf32> {
  %r = kiln.reduce_sum %a0 {dims = array<i64: 1>} : tensor<3x0xf32> -> tensor<3xf32>
  return %r : tensor<3xf32>
}
