func.func @f29(%x: tensor<4x3xf32>) {
  %r = kiln.reshape %x : tensor<4x3xf32> -> tensor<5x2xf32>
  return
}
