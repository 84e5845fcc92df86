func.func @main(%a: tensor<4x64xi8>, %s: tensor<4x4xbf16>) -> tensor<4x64xf32> {
  %r = kiln.dequantize %a, %s {block_size = 16} : (tensor<4x64xi8>, tensor<4x4xbf16>) -> tensor<4x64xf32>
  return %r : tensor<4x64xf32>
}
