func.func @f38(%x: tensor<4xf32>) {
  %r = kiln.slice %x {start = array<i64: 0, 0>, stop = array<i64: 4, 4>} : tensor<4xf32> -> tensor<4xf32>
  return
}
