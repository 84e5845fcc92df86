func.func @f10(%x: tensor<4xf32>) {
  %r = kiln.isnan %x : tensor<4xf32> -> tensor<5xi1>
  return
}
