func.func @main(%x: tensor<32x1000xf32>) -> tensor<32x1000xf32> {
  %0 = kiln.softmax %x {dim = 1} : tensor<32x1000xf32>
  return %0 : tensor<32x1000xf32>
}
