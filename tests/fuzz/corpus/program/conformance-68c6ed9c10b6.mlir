func.func @main(%a0: tensor<6x7xi32>, %a1: tensor<7xi32>) -> tensor<6x7xi32> {
  %r = kiln.min %a0, %a1 : (tensor<6x7xi32>, tensor<7xi32>) -> tensor<6x7xi32>
  return %r : tensor<6x7xi32>
}
