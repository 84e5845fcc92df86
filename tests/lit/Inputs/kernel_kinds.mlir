// One program with every kernel kind kiln forms: elementwise chains,
// broadcasts, movement, reductions, arg reductions, scans, scatter, gather,
// random, matmul (plain, batched, f16 and f8), softmax and norms, conv2d
// (grouped, with bias; f16 3x3 and 1x1, the tensor-core implicit GEMM on
// CUDA), the pools and attention (f16, causal).
func.func @main(%x: tensor<8x40xf32>, %w: tensor<40xf32>, %i: tensor<8x3xi64>,
                %h: tensor<2x8x16xf16>, %seed: tensor<i64>, %d: tensor<8x40xf64>,
                %cw: tensor<16x8x3x3xf16>, %pw: tensor<8x16x1x1xf16>)
    -> (tensor<8x40xf32>, tensor<8xf32>, tensor<8xi64>, tensor<8x40xf32>,
        tensor<8x40xf32>, tensor<8x3xf32>, tensor<8x40xf32>, tensor<8x40xf32>,
        tensor<8x8xf32>, tensor<2x8x8xf32>, tensor<16x40xf32>, tensor<8x40xf64>,
        tensor<f32>, tensor<8x40xf32>, tensor<1x4x4x5xf32>, tensor<1x2x3x4xf32>,
        tensor<1x2x4x5xf32>, tensor<2x8x16xf16>, tensor<2x8x4x4xf16>) {
  %0 = kiln.mul %x, %w : (tensor<8x40xf32>, tensor<40xf32>) -> tensor<8x40xf32>
  %1 = kiln.gelu %0 {approximate = "tanh"} : tensor<8x40xf32>
  %2 = kiln.reduce_sum %1 {dims = array<i64: 1>} : tensor<8x40xf32> -> tensor<8xf32>
  %3 = kiln.argmax %x {dim = 1} : tensor<8x40xf32> -> tensor<8xi64>
  %4 = kiln.cumsum %x {dim = 1} : tensor<8x40xf32>
  %5 = kiln.softmax %x {dim = 1} : tensor<8x40xf32>
  %6 = kiln.gather %x, %i {dim = 1} : (tensor<8x40xf32>, tensor<8x3xi64>) -> tensor<8x3xf32>
  %7 = kiln.layer_norm %x, %w, %w : (tensor<8x40xf32>, tensor<40xf32>, tensor<40xf32>) -> tensor<8x40xf32>
  %8 = kiln.random_normal %seed : tensor<i64> -> tensor<8x40xf32>
  %t = kiln.transpose %x {perm = array<i64: 1, 0>} : tensor<8x40xf32> -> tensor<40x8xf32>
  %9 = kiln.matmul %x, %t : (tensor<8x40xf32>, tensor<40x8xf32>) -> tensor<8x8xf32>
  %ht = kiln.transpose %h {perm = array<i64: 0, 2, 1>} : tensor<2x8x16xf16> -> tensor<2x16x8xf16>
  %10 = kiln.matmul %h, %ht : (tensor<2x8x16xf16>, tensor<2x16x8xf16>) -> tensor<2x8x8xf32>
  %11 = kiln.concat %x, %x {dim = 0} : (tensor<8x40xf32>, tensor<8x40xf32>) -> tensor<16x40xf32>
  %12 = kiln.erf %d : tensor<8x40xf64>
  %13 = kiln.reduce_max %x {dims = array<i64: 0, 1>} : tensor<8x40xf32> -> tensor<f32>
  %z = "kiln.fill"() {value = 0.0 : f64} : () -> tensor<8x40xf32>
  %14 = kiln.scatter_add %z, %i, %x {dim = 1} : (tensor<8x40xf32>, tensor<8x3xi64>, tensor<8x40xf32>) -> tensor<8x40xf32>
  %img = kiln.reshape %x : tensor<8x40xf32> -> tensor<1x2x8x20xf32>
  %wts = kiln.reshape %w : tensor<40xf32> -> tensor<4x1x2x5xf32>
  %bias = kiln.slice %w {start = array<i64: 0>, stop = array<i64: 4>} : tensor<40xf32> -> tensor<4xf32>
  %15 = kiln.conv2d %img, %wts, %bias {stride = array<i64: 2, 4>, padding = array<i64: 0, 1>, groups = 2 : i64} : (tensor<1x2x8x20xf32>, tensor<4x1x2x5xf32>, tensor<4xf32>) -> tensor<1x4x4x5xf32>
  %16 = kiln.max_pool2d %img {kernel = array<i64: 3, 5>, padding = array<i64: 1, 2>} : tensor<1x2x8x20xf32> -> tensor<1x2x3x4xf32>
  %17 = kiln.avg_pool2d %img {kernel = array<i64: 2, 4>} : tensor<1x2x8x20xf32> -> tensor<1x2x4x5xf32>
  %18 = kiln.attention %h, %h, %h {causal = true} : (tensor<2x8x16xf16>, tensor<2x8x16xf16>, tensor<2x8x16xf16>) -> tensor<2x8x16xf16>
  %planes = kiln.reshape %h : tensor<2x8x16xf16> -> tensor<2x8x4x4xf16>
  %19 = kiln.conv2d %planes, %cw {padding = array<i64: 1, 1>} : (tensor<2x8x4x4xf16>, tensor<16x8x3x3xf16>) -> tensor<2x16x4x4xf16>
  %20 = kiln.conv2d %19, %pw : (tensor<2x16x4x4xf16>, tensor<8x16x1x1xf16>) -> tensor<2x8x4x4xf16>
  return %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %20
      : tensor<8x40xf32>, tensor<8xf32>, tensor<8xi64>, tensor<8x40xf32>,
        tensor<8x40xf32>, tensor<8x3xf32>, tensor<8x40xf32>, tensor<8x40xf32>,
        tensor<8x8xf32>, tensor<2x8x8xf32>, tensor<16x40xf32>, tensor<8x40xf64>,
        tensor<f32>, tensor<8x40xf32>, tensor<1x4x4x5xf32>, tensor<1x2x3x4xf32>,
        tensor<1x2x4x5xf32>, tensor<2x8x16xf16>, tensor<2x8x4x4xf16>
}
