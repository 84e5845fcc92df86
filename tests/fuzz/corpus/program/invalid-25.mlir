func.func @f25(%s: tensor<i32>) {
  %r = kiln.random_uniform %s : tensor<i32> -> tensor<4xf32>
  return
}
