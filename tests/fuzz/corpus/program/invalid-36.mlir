func.func @f36(%x: tensor<4xf32>) {
  %r = kiln.slice %x {start = array<i64: 0>, stop = array<i64: 4>, step = array<i64: 0>} : tensor<4xf32> -> tensor<4xf32>
  return
}
