// Attention of run-time batch and sequence lengths: f16 causal (head dim
// 64) and with a mask over `?` keys (head dims 128), fused on every target
// (CUDA: the mma.sync kernel); f32, fused on the CPU and Vulkan, unfused
// on CUDA.
func.func @main(%q: tensor<?x?x64xf16>, %k: tensor<?x?x64xf16>, %qb: tensor<?x?x128xf16>,
                %kb: tensor<?x?x128xf16>, %mb: tensor<?x1x?xf16>, %qf: tensor<?x?x32xf32>,
                %kf: tensor<?x?x32xf32>)
    -> (tensor<?x?x64xf16>, tensor<?x?x128xf16>, tensor<?x?x32xf32>) {
  %a = kiln.attention %q, %k, %k {causal = true}
      : (tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?x64xf16>) -> tensor<?x?x64xf16>
  %b = kiln.attention %qb, %kb, %kb, %mb
      : (tensor<?x?x128xf16>, tensor<?x?x128xf16>, tensor<?x?x128xf16>, tensor<?x1x?xf16>)
      -> tensor<?x?x128xf16>
  %c = kiln.attention %qf, %kf, %kf
      : (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  return %a, %b, %c : tensor<?x?x64xf16>, tensor<?x?x128xf16>, tensor<?x?x32xf32>
}
