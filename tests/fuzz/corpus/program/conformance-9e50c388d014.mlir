func.func @main(%a0: tensor<2x3xf16>, %a1: tensor<2x5xf16>) -> tensor<2x8xf16> {
  %r = kiln.concat %a0, %a1 {dim = 1} : (tensor<2x3xf16>, tensor<2x5xf16>) -> tensor<2x8xf16>
  return %r : tensor<2x8xf16>
}
