func.func @f31(%x: tensor<4x3xf32>) {
  %r = kiln.broadcast %x : tensor<4x3xf32> -> tensor<3xf32>
  return
}
