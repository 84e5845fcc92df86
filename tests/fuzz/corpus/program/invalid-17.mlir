func.func @f17(%x: tensor<4xf32>, %y: tensor<4xf32>) {
  %r = kiln.and %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}
