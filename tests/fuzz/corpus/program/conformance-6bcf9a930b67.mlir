func.func @main(%a0: tensor<40xi32>, %a1: tensor<40xi32>) -> tensor<40xi32> {
  %r = kiln.shr %a0, %a1 : (tensor<40xi32>, tensor<40xi32>) -> tensor<40xi32>
  return %r : tensor<40xi32>
}
