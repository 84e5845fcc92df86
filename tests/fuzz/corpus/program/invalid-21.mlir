func.func @f21(%c: tensor<4xi1>, %x: tensor<4xf32>, %y: tensor<4xf64>) {
  %r = kiln.select %c, %x, %y : (tensor<4xi1>, tensor<4xf32>, tensor<4xf64>) -> tensor<4xf32>
  return
}
