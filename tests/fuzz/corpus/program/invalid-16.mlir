func.func @f16(%x: tensor<4xi32>, %y: tensor<4xi32>) {
  %r = kiln.pow %x, %y : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return
}
