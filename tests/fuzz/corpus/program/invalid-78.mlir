func.func @quantize_block(%x: tensor<4x30xf32>, %s: tensor<4x2xf32>) {
  %q = kiln.quantize %x, %s {block_size = 16} : (tensor<4x30xf32>, tensor<4x2xf32>) -> tensor<4x30xi8>
  return
}
