func.func @f9(%x: tensor<4xi32>) {
  %r = kiln.isnan %x : tensor<4xi32> -> tensor<4xi1>
  return
}
