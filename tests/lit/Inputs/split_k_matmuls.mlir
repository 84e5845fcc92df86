// Matmuls with few output tiles over a long K, which the sm_90a kernel
// splits: a decode step (M 16) with bias, gelu and the cast to bf16, a
// batched one, and x @ W^T.
func.func @main(%x: tensor<16x4096xbf16>, %w: tensor<4096x512xbf16>, %bias: tensor<512xf32>,
                %h: tensor<2x64x2048xf16>, %g: tensor<2x2048x72xf16>,
                %y: tensor<16x2048xbf16>, %v: tensor<256x2048xbf16>)
    -> (tensor<16x512xbf16>, tensor<2x64x72xf32>, tensor<16x256xf32>) {
  %0 = kiln.matmul %x, %w : (tensor<16x4096xbf16>, tensor<4096x512xbf16>) -> tensor<16x512xf32>
  %1 = kiln.add %0, %bias : (tensor<16x512xf32>, tensor<512xf32>) -> tensor<16x512xf32>
  %2 = kiln.gelu %1 : tensor<16x512xf32>
  %3 = kiln.cast %2 : tensor<16x512xf32> -> tensor<16x512xbf16>
  %4 = kiln.matmul %h, %g : (tensor<2x64x2048xf16>, tensor<2x2048x72xf16>) -> tensor<2x64x72xf32>
  %vt = kiln.transpose %v {perm = array<i64: 1, 0>} : tensor<256x2048xbf16> -> tensor<2048x256xbf16>
  %5 = kiln.matmul %y, %vt : (tensor<16x2048xbf16>, tensor<2048x256xbf16>) -> tensor<16x256xf32>
  return %3, %4, %5 : tensor<16x512xbf16>, tensor<2x64x72xf32>, tensor<16x256xf32>
}
