// Matmuls of odd N that the sm_90a kernel takes with static sizes: an LM
// head (x @ W^T, W read K-major where it stands; a vocabulary of 50257)
// and a tf32 matmul (B copied transposed first), both storing C's odd rows
// element by element.
func.func @main(%x: tensor<16x768xbf16>, %w: tensor<50257x768xbf16>, %a: tensor<100x64xf32>,
                %b: tensor<64x77xf32>) -> (tensor<16x50257xf32>, tensor<100x77xf32>) {
  %wt = kiln.transpose %w {perm = array<i64: 1, 0>} : tensor<50257x768xbf16> -> tensor<768x50257xbf16>
  %0 = kiln.matmul %x, %wt : (tensor<16x768xbf16>, tensor<768x50257xbf16>) -> tensor<16x50257xf32>
  %1 = kiln.matmul %a, %b : (tensor<100x64xf32>, tensor<64x77xf32>) -> tensor<100x77xf32>
  return %0, %1 : tensor<16x50257xf32>, tensor<100x77xf32>
}
