func.func @main(%x: tensor<?x?xf32>, %w: tensor<?xf32>, %b: tensor<?xf32>)
    -> (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xf32>, tensor<?x1xf32>,
        tensor<?xf32>, tensor<f32>) {
  %s = kiln.softmax %x {dim = 1} : tensor<?x?xf32>
  %l = kiln.log_softmax %x {dim = 0} : tensor<?x?xf32>
  %n = kiln.layer_norm %x, %w, %b : (tensor<?x?xf32>, tensor<?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
  %sum = kiln.reduce_sum %x {dims = array<i64: 1>} : tensor<?x?xf32> -> tensor<?xf32>
  %mean = kiln.reduce_mean %x {dims = array<i64: 1>, keep_dims = true} : tensor<?x?xf32> -> tensor<?x1xf32>
  %max = kiln.reduce_max %x {dims = array<i64: 0>} : tensor<?x?xf32> -> tensor<?xf32>
  %all = kiln.reduce_sum %x {dims = array<i64: 0, 1>} : tensor<?x?xf32> -> tensor<f32>
  return %s, %l, %n, %sum, %mean, %max, %all : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>,
      tensor<?xf32>, tensor<?x1xf32>, tensor<?xf32>, tensor<f32>
}
