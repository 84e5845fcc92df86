func.func @main(%a0: tensor<6x9xf32>) -> tensor<1x9xi64> {
  %r = kiln.argmin %a0 {dim = 0, keep_dims = true} : tensor<6x9xf32> -> tensor<1x9xi64>
  return %r : tensor<1x9xi64>
}
