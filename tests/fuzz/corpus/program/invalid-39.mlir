func.func @f39(%x: tensor<4xf32>) {
  %r = kiln.slice %x {start = array<i64: 0>, stop = array<i64: 4>, step = array<i64: 3>} : tensor<4xf32> -> tensor<1xf32>
  return
}
