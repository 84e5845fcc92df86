func.func @main(%a0: tensor<5x7xi32>) -> tensor<8x10xi32> {
  %r = kiln.pad %a0 {low = array<i64: 1, 0>, high = array<i64: 2, 3>, value = 9.0 : f64} : tensor<5x7xi32> -> tensor<8x10xi32>
  return %r : tensor<8x10xi32>
}
