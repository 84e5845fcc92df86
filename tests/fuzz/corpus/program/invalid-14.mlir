func.func @f14(%x: tensor<4x1xf32>, %y: tensor<3xf32>) {
  %r = kiln.sub %x, %y : (tensor<4x1xf32>, tensor<3xf32>) -> tensor<4x1xf32>
  return
}
