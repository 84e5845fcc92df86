// Reductions and scans long enough to be split across blocks
// (kiln-gpu-split-reductions, kiln-gpu-scans): full and few-row
// reductions with a tail, cumsums of several chunks in f32, f16 (summed in
// f32) and i64, along the last dim and along dim 0.
func.func @main(%x: tensor<65537xf32>, %r: tensor<3x40000xf32>, %h: tensor<5000x3xf16>,
                %i: tensor<2x4099xi64>)
    -> (tensor<f32>, tensor<f32>, tensor<3xf32>, tensor<65537xf32>, tensor<5000x3xf16>,
        tensor<2x4099xi64>) {
  %0 = kiln.reduce_sum %x {dims = array<i64: 0>} : tensor<65537xf32> -> tensor<f32>
  %1 = kiln.reduce_max %x {dims = array<i64: 0>} : tensor<65537xf32> -> tensor<f32>
  %2 = kiln.reduce_mean %r {dims = array<i64: 1>} : tensor<3x40000xf32> -> tensor<3xf32>
  %3 = kiln.cumsum %x {dim = 0} : tensor<65537xf32>
  %4 = kiln.cumsum %h {dim = 0} : tensor<5000x3xf16>
  %5 = kiln.cumsum %i {dim = 1} : tensor<2x4099xi64>
  return %0, %1, %2, %3, %4, %5 : tensor<f32>, tensor<f32>, tensor<3xf32>, tensor<65537xf32>,
                                  tensor<5000x3xf16>, tensor<2x4099xi64>
}
