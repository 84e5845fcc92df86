func.func @f50(%x: tensor<4x3xf32>, %i: tensor<4xi64>) {
  %r = kiln.gather %x, %i {dim = 1} : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<4xf32>
  return
}
