func.func @f32(%x: tensor<4x3xf32>) {
  %r = kiln.broadcast %x : tensor<4x3xf32> -> tensor<4x6xf32>
  return
}
