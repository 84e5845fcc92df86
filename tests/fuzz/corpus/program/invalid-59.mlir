func.func @f59(%x: tensor<4x3xf32>) {
  %r = kiln.reduce_sum %x {dims = array<i64: 1>} : tensor<4x3xf32> -> tensor<4xf64>
  return
}
