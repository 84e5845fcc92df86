func.func @f72(%a: tensor<4x3xf32>, %b: tensor<3x2xf32>) {
  %r = kiln.matmul %a, %b : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x3xf32>
  return
}
