func.func @f60(%x: tensor<4x3xi32>) {
  %r = kiln.reduce_mean %x {dims = array<i64: 1>} : tensor<4x3xi32> -> tensor<4xi32>
  return
}
