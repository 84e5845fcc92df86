func.func @f20(%c: tensor<4xi32>, %x: tensor<4xf32>) {
  %r = kiln.select %c, %x, %x : (tensor<4xi32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}
