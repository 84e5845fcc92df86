// Matmuls the sm_90a kernel takes: bf16 at odd M with bias + gelu fused,
// f16 batched, and a bf16 K that is not a multiple of the 64-element step.
func.func @main(%a: tensor<300x72xbf16>, %b: tensor<72x264xbf16>, %bias: tensor<264xf32>,
                %h: tensor<2x130x40xf16>, %g: tensor<2x40x136xf16>)
    -> (tensor<300x264xf32>, tensor<2x130x136xf32>) {
  %0 = kiln.matmul %a, %b : (tensor<300x72xbf16>, tensor<72x264xbf16>) -> tensor<300x264xf32>
  %1 = kiln.add %0, %bias : (tensor<300x264xf32>, tensor<264xf32>) -> tensor<300x264xf32>
  %2 = kiln.gelu %1 : tensor<300x264xf32>
  %3 = kiln.matmul %h, %g : (tensor<2x130x40xf16>, tensor<2x40x136xf16>) -> tensor<2x130x136xf32>
  return %2, %3 : tensor<300x264xf32>, tensor<2x130x136xf32>
}
