func.func @f2(%x: tensor<4xf32>) {
  %r = kiln.not %x : tensor<4xf32>
  return
}
