// f16 matmuls with f32 accumulation for Vulkan's cooperative-matrix kernel:
// partial 128 x 128 tiles with bias + gelu fused, batches with a shared B,
// and a K that is not a multiple of 4 (which takes the SIMT kernel).
func.func @main(%a: tensor<300x72xf16>, %b: tensor<72x264xf16>, %bias: tensor<264xf32>,
                %h: tensor<3x130x40xf16>, %g: tensor<40x136xf16>,
                %x: tensor<33x18xf16>, %w: tensor<18x70xf16>)
    -> (tensor<300x264xf32>, tensor<3x130x136xf32>, tensor<33x70xf32>) {
  %0 = kiln.matmul %a, %b : (tensor<300x72xf16>, tensor<72x264xf16>) -> tensor<300x264xf32>
  %1 = kiln.add %0, %bias : (tensor<300x264xf32>, tensor<264xf32>) -> tensor<300x264xf32>
  %2 = kiln.gelu %1 : tensor<300x264xf32>
  %3 = kiln.matmul %h, %g : (tensor<3x130x40xf16>, tensor<40x136xf16>) -> tensor<3x130x136xf32>
  %4 = kiln.matmul %x, %w : (tensor<33x18xf16>, tensor<18x70xf16>) -> tensor<33x70xf32>
  return %2, %3, %4 : tensor<300x264xf32>, tensor<3x130x136xf32>, tensor<33x70xf32>
}
