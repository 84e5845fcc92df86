func.func @main(%a0: tensor<5x7xi32>) -> tensor<2x3xi32> {
  %r = kiln.slice %a0 {start = array<i64: 1, 0>, stop = array<i64: 5, 7>, step = array<i64: 2, 3>} : tensor<5x7xi32> -> tensor<2x3xi32>
  return %r : tensor<2x3xi32>
}
