func.func @main(%a: tensor<4x64xi8>, %s: tensor<f16>) -> tensor<4x64xf32> {
  %r = kiln.dequantize %a, %s : (tensor<4x64xi8>, tensor<f16>) -> tensor<4x64xf32>
  return %r : tensor<4x64xf32>
}
