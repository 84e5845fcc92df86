func.func @quantize_block_scale_shape(%x: tensor<4x32xf32>, %s: tensor<4x4xf32>) {
  %q = kiln.quantize %x, %s {block_size = 16} : (tensor<4x32xf32>, tensor<4x4xf32>) -> tensor<4x32xi8>
  return
}
