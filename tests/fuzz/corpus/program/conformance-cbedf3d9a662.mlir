func.func @main(%a0: tensor<6x9xi32>) -> tensor<6xi64> {
  %r = kiln.argmin %a0 {dim = 1} : tensor<6x9xi32> -> tensor<6xi64>
  return %r : tensor<6xi64>
}
