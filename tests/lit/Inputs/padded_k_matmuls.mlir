// Matmuls whose K is no whole 16-byte units (TMA's strides), which the
// sm_90a kernel takes through zero-padded copies of A and of B transposed:
// bf16 3000x511x257 cast to bf16, and f16 batched with a shared B.
func.func @main(%a: tensor<3000x511xbf16>, %b: tensor<511x257xbf16>, %x: tensor<2x100x36xf16>, %y: tensor<36x72xf16>) -> (tensor<3000x257xbf16>, tensor<2x100x72xf32>) {
  %0 = kiln.matmul %a, %b : (tensor<3000x511xbf16>, tensor<511x257xbf16>) -> tensor<3000x257xf32>
  %1 = kiln.cast %0 : tensor<3000x257xf32> -> tensor<3000x257xbf16>
  %2 = kiln.matmul %x, %y : (tensor<2x100x36xf16>, tensor<36x72xf16>) -> tensor<2x100x72xf32>
  return %1, %2 : tensor<3000x257xbf16>, tensor<2x100x72xf32>
}
