func.func @f73(%x: tensor<4x8xf32>, %w: tensor<4xf32>) {
  %r = kiln.layer_norm %x, %w, %w : (tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4x8xf32>
  return
}
