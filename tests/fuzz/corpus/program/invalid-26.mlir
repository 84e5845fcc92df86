func.func @f26(%s: tensor<i64>) {
  %r = kiln.random_uniform %s : tensor<i64> -> tensor<4xi32>
  return
}
