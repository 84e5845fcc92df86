func.func @main(%a: tensor<4x64xf32>, %s: tensor<f16>) -> tensor<4x64xi8> {
  %r = kiln.quantize %a, %s : (tensor<4x64xf32>, tensor<f16>) -> tensor<4x64xi8>
  return %r : tensor<4x64xi8>
}
