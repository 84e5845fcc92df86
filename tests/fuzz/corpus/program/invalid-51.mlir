func.func @f51(%x: tensor<4x3xf32>, %i: tensor<5x2xi64>) {
  %r = kiln.gather %x, %i {dim = 1} : (tensor<4x3xf32>, tensor<5x2xi64>) -> tensor<5x2xf32>
  return
}
