func.func @main(%a0: tensor<6x7xi64>, %a1: tensor<7xi64>) -> tensor<6x7xi64> {
  %r = kiln.div %a0, %a1 : (tensor<6x7xi64>, tensor<7xi64>) -> tensor<6x7xi64>
  return %r : tensor<6x7xi64>
}
