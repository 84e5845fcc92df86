func.func @f23() {
  %r = kiln.iota {dim = 2} : tensor<4x3xf32>
  return
}
