func.func @quantize_scale_rank(%x: tensor<4x32xf32>, %s: tensor<4xf32>) {
  %q = kiln.quantize %x, %s : (tensor<4x32xf32>, tensor<4xf32>) -> tensor<4x32xi8>
  return
}
