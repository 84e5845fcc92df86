func.func @f52(%x: tensor<4x3xf32>, %i: tensor<2x2xi64>) {
  %r = kiln.index_select %x, %i {dim = 1} : (tensor<4x3xf32>, tensor<2x2xi64>) -> tensor<4x2xf32>
  return
}
