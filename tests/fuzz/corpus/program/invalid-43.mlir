func.func @f43(%x: tensor<4xf32>) {
  %r = kiln.flip %x {dims = array<i64: 1>} : tensor<4xf32> -> tensor<4xf32>
  return
}
