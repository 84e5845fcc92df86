func.func @main(%s: tensor<i64>) -> tensor<256x256xf32> {
  %r = kiln.random_uniform %s {low = -1.0 : f64, high = 3.0 : f64} : tensor<i64> -> tensor<256x256xf32>
  return %r : tensor<256x256xf32>
}
