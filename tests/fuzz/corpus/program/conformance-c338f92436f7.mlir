func.func @main(%a0: tensor<5x8xi1>, %a1: tensor<5x8xi1>) -> tensor<5x8xi1> {
  %r = kiln.and %a0, %a1 : (tensor<5x8xi1>, tensor<5x8xi1>) -> tensor<5x8xi1>
  return %r : tensor<5x8xi1>
}
