func.func @f70(%a: tensor<2x4x3xf32>, %b: tensor<3x3x2xf32>) {
  %r = kiln.matmul %a, %b : (tensor<2x4x3xf32>, tensor<3x3x2xf32>) -> tensor<2x4x2xf32>
  return
}
