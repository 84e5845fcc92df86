func.func @f65(%x: tensor<4x3xf32>) {
  %r = kiln.softmax %x {dim = -1} : tensor<4x3xf32>
  return
}
