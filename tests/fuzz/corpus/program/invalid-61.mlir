func.func @f61(%x: tensor<4x3xf32>) {
  %r = kiln.reduce_any %x {dims = array<i64: 1>} : tensor<4x3xf32> -> tensor<4xf32>
  return
}
