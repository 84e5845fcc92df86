func.func @f5(%x: tensor<4xf32>) {
  %r = kiln.gelu %x {approximate = "fast"} : tensor<4xf32>
  return
}
