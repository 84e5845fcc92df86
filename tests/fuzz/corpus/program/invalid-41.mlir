func.func @f41(%x: tensor<4xf32>) {
  %r = kiln.pad %x {low = array<i64: 1>, high = array<i64: 1>} : tensor<4xf32> -> tensor<5xf32>
  return
}
