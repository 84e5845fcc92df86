func.func @main(%x: tensor<16x768xf32>, %w: tensor<768xf32>, %b: tensor<768xf32>) -> tensor<16x768xf32> {
  %0 = kiln.layer_norm %x, %w, %b {eps = 1.0e-5 : f64} : (tensor<16x768xf32>, tensor<768xf32>, tensor<768xf32>) -> tensor<16x768xf32>
  return %0 : tensor<16x768xf32>
}
