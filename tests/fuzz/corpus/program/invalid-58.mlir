func.func @f58(%x: tensor<4x3xf32>) {
  %r = kiln.reduce_max %x {dims = array<i64: 1>, keep_dims = true} : tensor<4x3xf32> -> tensor<4xf32>
  return
}
