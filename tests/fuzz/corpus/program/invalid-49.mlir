func.func @f49(%x: tensor<4x3xf32>, %i: tensor<4x3xf32>) {
  %r = kiln.gather %x, %i {dim = 1} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  return
}
