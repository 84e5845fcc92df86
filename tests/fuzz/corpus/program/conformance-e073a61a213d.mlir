func.func @main(%a0: tensor<40xui16>, %a1: tensor<40xui16>) -> tensor<40xui16> {
  %r = kiln.shr %a0, %a1 : (tensor<40xui16>, tensor<40xui16>) -> tensor<40xui16>
  return %r : tensor<40xui16>
}
