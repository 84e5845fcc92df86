func.func @main(%a0: tensor<6x50xf32>, %a1: tensor<50xf32>, %a2: tensor<50xf32>) -> tensor<6x50xf32> {
  %r = kiln.layer_norm %a0, %a1, %a2 {eps = 1.0e-5 : f64} : (tensor<6x50xf32>, tensor<50xf32>, tensor<50xf32>) -> tensor<6x50xf32>
  return %r : tensor<6x50xf32>
}
