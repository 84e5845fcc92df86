func.func @f62(%x: tensor<4x3xf32>) {
  %r = kiln.argmax %x {dim = 1} : tensor<4x3xf32> -> tensor<4xi32>
  return
}
