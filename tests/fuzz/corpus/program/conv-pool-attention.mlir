func.func @main(%x: tensor<1x4x7x6xf16>, %w: tensor<6x2x3x2xf16>, %b: tensor<6xf16>, %q: tensor<2x5x8xf32>, %k: tensor<2x7x8xf32>, %v: tensor<2x7x4xf32>, %m: tensor<5x7xi1>) -> (tensor<1x6x4x2xf16>, tensor<1x6x2x2xf16>, tensor<1x6x4x2xf16>, tensor<2x5x4xf32>) {
  %c = kiln.conv2d %x, %w, %b {stride = array<i64: 2, 2>, padding = array<i64: 1, 0>, dilation = array<i64: 1, 2>, groups = 2 : i64} : (tensor<1x4x7x6xf16>, tensor<6x2x3x2xf16>, tensor<6xf16>) -> tensor<1x6x4x2xf16>
  %p = kiln.max_pool2d %c {kernel = array<i64: 3, 2>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : tensor<1x6x4x2xf16> -> tensor<1x6x2x2xf16>
  %a = kiln.avg_pool2d %c {kernel = array<i64: 3, 3>, stride = array<i64: 1, 1>, padding = array<i64: 1, 1>} : tensor<1x6x4x2xf16> -> tensor<1x6x4x2xf16>
  %t = kiln.attention %q, %k, %v, %m {causal = true, scale = 0.5 : f64} : (tensor<2x5x8xf32>, tensor<2x7x8xf32>, tensor<2x7x4xf32>, tensor<5x7xi1>) -> tensor<2x5x4xf32>
  return %c, %p, %a, %t : tensor<1x6x4x2xf16>, tensor<1x6x2x2xf16>, tensor<1x6x4x2xf16>, tensor<2x5x4xf32>
}
