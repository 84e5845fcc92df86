func.func @f63(%x: tensor<4x0xf32>) {
  %r = kiln.argmin %x {dim = 1} : tensor<4x0xf32> -> tensor<4xi64>
  return
}
