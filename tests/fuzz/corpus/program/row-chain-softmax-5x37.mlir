func.func @main(%a0: tensor<5x37xf32>) -> tensor<5x37xf32> {
  %r = kiln.softmax %a0 {dim = 1} : tensor<5x37xf32>
  return %r : tensor<5x37xf32>
}
