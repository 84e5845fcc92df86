func.func @f0(%x: tensor<4xi32>) {
  %r = kiln.exp %x : tensor<4xi32>
  return
}
