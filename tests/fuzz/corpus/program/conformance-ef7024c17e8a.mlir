func.func @main(%a0: tensor<f32>, %a1: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %r = kiln.mul %a0, %a1 : (tensor<f32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  return %r : tensor<2x2xf32>
}
