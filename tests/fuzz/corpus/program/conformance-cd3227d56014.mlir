func.func @main(%a: tensor<300x72xf16>, %b: tensor<72x264xf16>) -> tensor<300x264xf32> {
  %r = kiln.matmul %a, %b : (tensor<300x72xf16>, tensor<72x264xf16>) -> tensor<300x264xf32>
  return %r : tensor<300x264xf32>
}
