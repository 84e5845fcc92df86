// ResNet-50's 256->256 3x3 conv on 14x14 planes at batch 32, f16, with a
// bias: conv-implicit-gemm.test compiles it for CUDA.
func.func @main(%x: tensor<32x256x14x14xf16>, %w: tensor<256x256x3x3xf16>, %b: tensor<256xf16>) -> tensor<32x256x14x14xf16> {
  %r = kiln.conv2d %x, %w, %b {padding = array<i64: 1, 1>} : (tensor<32x256x14x14xf16>, tensor<256x256x3x3xf16>, tensor<256xf16>) -> tensor<32x256x14x14xf16>
  return %r : tensor<32x256x14x14xf16>
}
