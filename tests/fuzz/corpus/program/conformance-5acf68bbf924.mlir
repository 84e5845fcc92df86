func.func @main(%a0: tensor<0x3xf32>, %a1: tensor<1x3xf32>) -> tensor<0x3xf32> {
  %r = kiln.add %a0, %a1 : (tensor<0x3xf32>, tensor<1x3xf32>) -> tensor<0x3xf32>
  return %r : tensor<0x3xf32>
}
