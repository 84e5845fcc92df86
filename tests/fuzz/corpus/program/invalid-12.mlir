func.func @f12(%x: tensor<4xf32>, %y: tensor<4xf16>) {
  %r = kiln.add %x, %y : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}
