func.func @f22(%c: tensor<3xi1>, %x: tensor<4xf32>) {
  %r = kiln.select %c, %x, %x : (tensor<3xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}
