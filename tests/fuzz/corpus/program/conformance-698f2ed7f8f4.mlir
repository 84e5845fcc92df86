func.func @main(%x: tensor<300x72xf32>, %w: tensor<72x264xf32>, %b: tensor<264xf32>) -> tensor<300x264xf32> {
  %0 = kiln.matmul %x, %w : (tensor<300x72xf32>, tensor<72x264xf32>) -> tensor<300x264xf32>
  %1 = kiln.add %0, %b : (tensor<300x264xf32>, tensor<264xf32>) -> tensor<300x264xf32>
  %2 = kiln.gelu %1 : tensor<300x264xf32>
  return %2 : tensor<300x264xf32>
}
