func.func @quantize_result(%x: tensor<8xf32>, %s: tensor<f32>) {
  %q = kiln.quantize %x, %s : (tensor<8xf32>, tensor<f32>) -> tensor<8xi32>
  return
}
