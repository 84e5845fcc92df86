func.func @main(%x: tensor<64x32xf32>, %w: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<64x32xf32> {
  %0 = kiln.mul %x, %w : (tensor<64x32xf32>, tensor<32xf32>) -> tensor<64x32xf32>
  %1 = kiln.add %0, %b : (tensor<64x32xf32>, tensor<32xf32>) -> tensor<64x32xf32>
  %2 = kiln.gelu %1 : tensor<64x32xf32>
  return %2 : tensor<64x32xf32>
}
