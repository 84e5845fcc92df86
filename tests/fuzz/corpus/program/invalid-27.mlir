func.func @f27(%s: tensor<i64>) {
  %r = kiln.random_uniform %s {low = 2.0 : f64, high = 1.0 : f64} : tensor<i64> -> tensor<4xf32>
  return
}
