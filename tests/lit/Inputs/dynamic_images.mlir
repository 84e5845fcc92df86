// Convs and pools over images of run-time size (batch, height, width `?`):
// ptxas-dynamic.test and spirv-val-dynamic.test assemble their kernels.
func.func @main(%x: tensor<?x8x?x?xf16>, %w: tensor<16x8x3x3xf16>, %b: tensor<16xf16>,
                %wd: tensor<8x1x3x3xf16>)
    -> (tensor<?x16x?x?xf16>, tensor<?x8x?x?xf16>, tensor<?x8x?x?xf16>, tensor<?x8x?x?xf16>) {
  %c = kiln.conv2d %x, %w, %b {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>}
      : (tensor<?x8x?x?xf16>, tensor<16x8x3x3xf16>, tensor<16xf16>) -> tensor<?x16x?x?xf16>
  %d = kiln.conv2d %x, %wd {padding = array<i64: 1, 1>, groups = 8}
      : (tensor<?x8x?x?xf16>, tensor<8x1x3x3xf16>) -> tensor<?x8x?x?xf16>
  %m = kiln.max_pool2d %x {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>}
      : tensor<?x8x?x?xf16> -> tensor<?x8x?x?xf16>
  %a = kiln.avg_pool2d %x {kernel = array<i64: 2, 2>} : tensor<?x8x?x?xf16> -> tensor<?x8x?x?xf16>
  return %c, %d, %m, %a : tensor<?x16x?x?xf16>, tensor<?x8x?x?xf16>, tensor<?x8x?x?xf16>, tensor<?x8x?x?xf16>
}
