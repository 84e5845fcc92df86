func.func @f19(%x: tensor<4xf32>, %y: tensor<4xf32>) {
  %r = kiln.lt %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}
