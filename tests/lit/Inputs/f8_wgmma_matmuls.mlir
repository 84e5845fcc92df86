// f8 matmuls for the sm_90a kernel: _scaled_mm's form (scales, cast to
// bf16 in the epilogue; K 80 a partial step) and a batched one of e4m3
// times e5m2.
func.func @main(%a: tensor<300x80xf8E4M3FN>, %b: tensor<80x264xf8E4M3FN>, %sa: tensor<f32>,
                %sb: tensor<f32>, %x: tensor<2x130x48xf8E4M3FN>, %y: tensor<2x48x136xf8E5M2>)
    -> (tensor<300x264xbf16>, tensor<2x130x136xf32>) {
  %r = kiln.matmul %a, %b : (tensor<300x80xf8E4M3FN>, tensor<80x264xf8E4M3FN>) -> tensor<300x264xf32>
  %s = kiln.mul %sa, %sb : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %sr = kiln.broadcast %s : tensor<f32> -> tensor<300x264xf32>
  %m = kiln.mul %r, %sr : (tensor<300x264xf32>, tensor<300x264xf32>) -> tensor<300x264xf32>
  %c = kiln.cast %m : tensor<300x264xf32> -> tensor<300x264xbf16>
  %p = kiln.matmul %x, %y : (tensor<2x130x48xf8E4M3FN>, tensor<2x48x136xf8E5M2>) -> tensor<2x130x136xf32>
  return %c, %p : tensor<300x264xbf16>, tensor<2x130x136xf32>
}
