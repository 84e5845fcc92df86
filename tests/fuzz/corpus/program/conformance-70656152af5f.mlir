func.func @main(%x: tensor<7x100xf32>, %w: tensor<100x150xf32>, %b: tensor<150xf32>) -> tensor<7x150xf32> {
  %0 = kiln.matmul %x, %w : (tensor<7x100xf32>, tensor<100x150xf32>) -> tensor<7x150xf32>
  %1 = kiln.add %0, %b : (tensor<7x150xf32>, tensor<150xf32>) -> tensor<7x150xf32>
  %2 = kiln.gelu %1 : tensor<7x150xf32>
  return %2 : tensor<7x150xf32>
}
