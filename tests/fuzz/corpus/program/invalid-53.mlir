func.func @f53(%x: tensor<4x3xf32>, %i: tensor<2xi64>) {
  %r = kiln.index_select %x, %i {dim = 1} : (tensor<4x3xf32>, tensor<2xi64>) -> tensor<4x3xf32>
  return
}
