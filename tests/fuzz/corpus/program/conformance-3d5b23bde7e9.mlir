func.func @main(%s: tensor<i64>) -> tensor<512x256xf32> {
  %r = kiln.random_normal %s {mean = 2.0 : f64, std = 0.5 : f64} : tensor<i64> -> tensor<512x256xf32>
  return %r : tensor<512x256xf32>
}
