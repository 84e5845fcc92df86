func.func @main(%a0: tensor<8x300xf16>, %a1: tensor<300x5xf16>) -> tensor<8x5xf16> {
  %r = kiln.matmul %a0, %a1 : (tensor<8x300xf16>, tensor<300x5xf16>) -> tensor<8x5xf16>
  return %r : tensor<8x5xf16>
}
