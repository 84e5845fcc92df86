func.func @main(%a0: tensor<4x7xi1>) -> tensor<7xi1> {
  %r = kiln.reduce_all %a0 {dims = array<i64: 0>} : tensor<4x7xi1> -> tensor<7xi1>
  return %r : tensor<7xi1>
}
