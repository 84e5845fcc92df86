func.func @main(%a0: tensor<6x50xf16>, %a1: tensor<50xf16>) -> tensor<6x50xf16> {
  %r = kiln.rms_norm %a0, %a1 {eps = 1.0e-6 : f64} : (tensor<6x50xf16>, tensor<50xf16>) -> tensor<6x50xf16>
  return %r : tensor<6x50xf16>
}
