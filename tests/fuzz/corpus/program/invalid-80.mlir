func.func @quantize_scale_type(%x: tensor<8xf32>, %s: tensor<f64>) {
  %q = kiln.quantize %x, %s : (tensor<8xf32>, tensor<f64>) -> tensor<8xi8>
  return
}
