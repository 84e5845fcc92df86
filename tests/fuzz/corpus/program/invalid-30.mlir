func.func @f30(%x: tensor<4x3xf32>) {
  %r = kiln.reshape %x : tensor<4x3xf32> -> tensor<12xf16>
  return
}
