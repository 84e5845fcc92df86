// Attention the CUDA tensor-core kernel takes: bf16 head dim 128 causal
// with odd lengths, f16 head dim 64 with an additive mask and Lq != Lk,
// f16 with a boolean mask broadcast over the batch.
func.func @main(%q: tensor<2x2x200x128xbf16>, %k: tensor<2x2x77x128xbf16>,
                %h: tensor<3x130x64xf16>, %hk: tensor<3x96x64xf16>, %m: tensor<130x96xf16>,
                %b: tensor<1x130x96xi1>)
    -> (tensor<2x2x200x128xbf16>, tensor<3x130x64xf16>, tensor<3x130x64xf16>) {
  %0 = kiln.attention %q, %k, %k {causal = true} : (tensor<2x2x200x128xbf16>, tensor<2x2x77x128xbf16>, tensor<2x2x77x128xbf16>) -> tensor<2x2x200x128xbf16>
  %1 = kiln.attention %h, %hk, %hk, %m : (tensor<3x130x64xf16>, tensor<3x96x64xf16>, tensor<3x96x64xf16>, tensor<130x96xf16>) -> tensor<3x130x64xf16>
  %2 = kiln.attention %h, %hk, %hk, %b : (tensor<3x130x64xf16>, tensor<3x96x64xf16>, tensor<3x96x64xf16>, tensor<1x130x96xi1>) -> tensor<3x130x64xf16>
  return %0, %1, %2 : tensor<2x2x200x128xbf16>, tensor<3x130x64xf16>, tensor<3x130x64xf16>
}
