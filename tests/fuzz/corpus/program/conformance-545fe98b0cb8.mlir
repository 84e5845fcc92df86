func.func @main(%a: tensor<5x24xf32>, %b: tensor<24x7xf32>) -> tensor<5x7xf32> {
  %0 = kiln.cast %a : tensor<5x24xf32> -> tensor<5x24xf8E4M3FN>
  %1 = kiln.cast %b : tensor<24x7xf32> -> tensor<24x7xf8E4M3FN>
  %2 = kiln.matmul %0, %1 : (tensor<5x24xf8E4M3FN>, tensor<24x7xf8E4M3FN>) -> tensor<5x7xf32>
  return %2 : tensor<5x7xf32>
}
