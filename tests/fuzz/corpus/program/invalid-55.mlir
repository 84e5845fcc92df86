func.func @f55(%x: tensor<4x3xi1>, %i: tensor<4x3xi64>) {
  %r = kiln.scatter_add %x, %i, %x {dim = 1} : (tensor<4x3xi1>, tensor<4x3xi64>, tensor<4x3xi1>) -> tensor<4x3xi1>
  return
}
