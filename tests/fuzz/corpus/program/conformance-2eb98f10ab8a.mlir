func.func @main(%a0: tensor<30xi32>) -> tensor<30xi32> {
  %r = kiln.clamp %a0 {min = -3.0 : f64} : tensor<30xi32>
  return %r : tensor<30xi32>
}
