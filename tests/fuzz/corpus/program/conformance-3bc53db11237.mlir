func.func @main(%x: tensor<3x5xbf16>, %w: tensor<5x9xbf16>, %b: tensor<9xf32>) -> tensor<3x9xf32> {
  %0 = kiln.matmul %x, %w : (tensor<3x5xbf16>, tensor<5x9xbf16>) -> tensor<3x9xf32>
  %1 = kiln.add %0, %b : (tensor<3x9xf32>, tensor<9xf32>) -> tensor<3x9xf32>
  %2 = kiln.gelu %1 : tensor<3x9xf32>
  return %2 : tensor<3x9xf32>
}
