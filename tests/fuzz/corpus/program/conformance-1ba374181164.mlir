func.func @main(%x: tensor<5x32xf32>, %q: tensor<32x24xi8>, %s: tensor<32x3xf32>) -> tensor<5x24xf32> {
  %w = kiln.dequantize %q, %s {block_size = 8} : (tensor<32x24xi8>, tensor<32x3xf32>) -> tensor<32x24xf32>
  %y = kiln.matmul %x, %w : (tensor<5x32xf32>, tensor<32x24xf32>) -> tensor<5x24xf32>
  return %y : tensor<5x24xf32>
}
