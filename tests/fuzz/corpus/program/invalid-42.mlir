func.func @f42(%x: tensor<4xf32>) {
  %r = kiln.pad %x {low = array<i64: 1, 1>, high = array<i64: 1>} : tensor<4xf32> -> tensor<6xf32>
  return
}
