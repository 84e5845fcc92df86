func.func @f66(%x: tensor<4x3xi32>) {
  %r = kiln.log_softmax %x {dim = 1} : tensor<4x3xi32>
  return
}
