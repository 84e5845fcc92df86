func.func @main(%a: tensor<4x64xf32>, %s: tensor<4x4xf16>) -> tensor<4x64xi8> {
  %r = kiln.quantize %a, %s {block_size = 16} : (tensor<4x64xf32>, tensor<4x4xf16>) -> tensor<4x64xi8>
  return %r : tensor<4x64xi8>
}
