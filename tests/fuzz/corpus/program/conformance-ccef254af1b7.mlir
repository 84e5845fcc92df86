func.func @main(%a0: tensor<5x37xf16>) -> tensor<5x37xf16> {
  %r = kiln.softmax %a0 {dim = 0} : tensor<5x37xf16>
  return %r : tensor<5x37xf16>
}
