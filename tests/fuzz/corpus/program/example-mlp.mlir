func.func @main(%x: tensor<64x256xf32>, %w: tensor<256x128xf32>, %b: tensor<128xf32>) -> tensor<64x128xf32> {
  %0 = kiln.matmul %x, %w : (tensor<64x256xf32>, tensor<256x128xf32>) -> tensor<64x128xf32>
  %1 = kiln.add %0, %b : (tensor<64x128xf32>, tensor<128xf32>) -> tensor<64x128xf32>
  %2 = kiln.gelu %1 : tensor<64x128xf32>
  return %2 : tensor<64x128xf32>
}
