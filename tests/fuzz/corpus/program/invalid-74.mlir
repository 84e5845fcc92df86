func.func @f74(%x: tensor<4x8xf32>, %w: tensor<8xf32>) {
  %r = kiln.rms_norm %x, %w {eps = -1.0 : f64} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return
}
