func.func @f69(%a: tensor<4x3xf32>, %b: tensor<4x2xf32>) {
  %r = kiln.matmul %a, %b : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  return
}
