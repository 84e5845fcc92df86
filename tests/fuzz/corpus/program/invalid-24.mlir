func.func @f24() {
  %r = kiln.iota {dim = 0} : tensor<4xi1>
  return
}
