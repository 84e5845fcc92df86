func.func @main(%a0: tensor<4x7xi1>) -> tensor<4xi1> {
  %r = kiln.reduce_any %a0 {dims = array<i64: 1>} : tensor<4x7xi1> -> tensor<4xi1>
  return %r : tensor<4xi1>
}
