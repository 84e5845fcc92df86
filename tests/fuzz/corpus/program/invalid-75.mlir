func.func @f75(%x: tensor<4x8xi32>, %w: tensor<8xi32>) {
  %r = kiln.rms_norm %x, %w : (tensor<4x8xi32>, tensor<8xi32>) -> tensor<4x8xi32>
  return
}
