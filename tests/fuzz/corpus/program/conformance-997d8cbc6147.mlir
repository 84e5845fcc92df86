func.func @main(%a0: tensor<5x37xf64>) -> tensor<5x37xf64> {
  %r = kiln.softmax %a0 {dim = 0} : tensor<5x37xf64>
  return %r : tensor<5x37xf64>
}
