func.func @f54(%x: tensor<4x3xf32>, %i: tensor<4x3xi64>, %s: tensor<4x2xf32>) {
  %r = kiln.scatter_add %x, %i, %s {dim = 1} : (tensor<4x3xf32>, tensor<4x3xi64>, tensor<4x2xf32>) -> tensor<4x3xf32>
  return
}
