func.func @main(%a0: tensor<6x7xi16>, %a1: tensor<7xi16>) -> tensor<6x7xi16> {
  %r = kiln.rem %a0, %a1 : (tensor<6x7xi16>, tensor<7xi16>) -> tensor<6x7xi16>
  return %r : tensor<6x7xi16>
}
