func.func @main(%a: tensor<64x1024xf16>, %b: tensor<1024x128xf16>) -> tensor<64x128xf32> {
  %r = kiln.matmul %a, %b : (tensor<64x1024xf16>, tensor<1024x128xf16>) -> tensor<64x128xf32>
  return %r : tensor<64x128xf32>
}
