func.func @main(%a0: tensor<5x17xf32>) -> tensor<5x17xf32> {
  %r = kiln.gelu %a0 {approximate = "tanh"} : tensor<5x17xf32>
  return %r : tensor<5x17xf32>
}
