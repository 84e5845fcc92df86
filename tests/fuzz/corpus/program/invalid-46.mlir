func.func @f46(%x: tensor<4x3xf32>, %y: tensor<4xf32>) {
  %r = kiln.concat %x, %y {dim = 0} : (tensor<4x3xf32>, tensor<4xf32>) -> tensor<8x3xf32>
  return
}
