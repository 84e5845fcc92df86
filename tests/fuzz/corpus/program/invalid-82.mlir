func.func @dequantize_input(%q: tensor<8xi32>, %s: tensor<f32>) {
  %x = kiln.dequantize %q, %s : (tensor<8xi32>, tensor<f32>) -> tensor<8xf32>
  return
}
