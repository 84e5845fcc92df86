func.func @f6(%x: tensor<4xf32>) {
  %r = kiln.clamp %x : tensor<4xf32>
  return
}
