func.func @f37(%x: tensor<4xf32>) {
  %r = kiln.slice %x {start = array<i64: 2>, stop = array<i64: 5>} : tensor<4xf32> -> tensor<3xf32>
  return
}
