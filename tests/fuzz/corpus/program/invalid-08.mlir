func.func @f8(%x: tensor<4xf32>) {
  %r = kiln.isnan %x : tensor<4xf32> -> tensor<4xf32>
  return
}
