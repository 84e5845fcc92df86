func.func @f13(%x: tensor<4x3xf32>, %y: tensor<4xf32>) {
  %r = kiln.mul %x, %y : (tensor<4x3xf32>, tensor<4xf32>) -> tensor<4x3xf32>
  return
}
