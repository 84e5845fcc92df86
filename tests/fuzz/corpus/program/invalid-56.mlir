func.func @f56(%x: tensor<4x3xf32>) {
  %r = kiln.reduce_sum %x {dims = array<i64: 2>} : tensor<4x3xf32> -> tensor<4xf32>
  return
}
