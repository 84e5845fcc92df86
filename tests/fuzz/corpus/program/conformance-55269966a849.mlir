func.func @main(%a: tensor<5x16xf16>, %b: tensor<16x8xf16>) -> tensor<5x8xf32> {
  %r = kiln.matmul %a, %b : (tensor<5x16xf16>, tensor<16x8xf16>) -> tensor<5x8xf32>
  return %r : tensor<5x8xf32>
}
