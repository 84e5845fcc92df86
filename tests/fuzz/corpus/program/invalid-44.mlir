func.func @f44(%x: tensor<4x3xf32>, %y: tensor<4x3xf16>) {
  %r = kiln.concat %x, %y {dim = 0} : (tensor<4x3xf32>, tensor<4x3xf16>) -> tensor<8x3xf32>
  return
}
