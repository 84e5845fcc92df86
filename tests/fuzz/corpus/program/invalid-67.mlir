func.func @f67(%x: tensor<4x3xi1>) {
  %r = kiln.cumsum %x {dim = 1} : tensor<4x3xi1>
  return
}
