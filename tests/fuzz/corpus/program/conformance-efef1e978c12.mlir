func.func @main(%a0: tensor<30xf32>) -> tensor<30xf32> {
  %r = kiln.clamp %a0 {min = -1.5 : f64, max = 2.0 : f64} : tensor<30xf32>
  return %r : tensor<30xf32>
}
