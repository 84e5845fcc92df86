func.func @main(%a0: tensor<3x1x5xf16>, %a1: tensor<4x5xf16>) -> tensor<3x4x5xf16> {
  %r = kiln.sub %a0, %a1 : (tensor<3x1x5xf16>, tensor<4x5xf16>) -> tensor<3x4x5xf16>
  return %r : tensor<3x4x5xf16>
}
