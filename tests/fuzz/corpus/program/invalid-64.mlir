func.func @f64(%x: tensor<4x3xf32>) {
  %r = kiln.argmax %x {dim = 1, keep_dims = true} : tensor<4x3xf32> -> tensor<4xi64>
  return
}
