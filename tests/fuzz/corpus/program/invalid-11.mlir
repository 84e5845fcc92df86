func.func @f11(%x: tensor<4xf32>) {
  %r = kiln.cast %x : tensor<4xf32> -> tensor<3xi8>
  return
}
