// Causal attention of run-time batch and sequence lengths, head dims 64
// and 128 (sm_90a: the wgmma kernel).
func.func @main(%q: tensor<?x?x64xf16>, %k: tensor<?x?x64xf16>, %qb: tensor<?x?x128xbf16>,
                %kb: tensor<?x?x128xbf16>) -> (tensor<?x?x64xf16>, tensor<?x?x128xbf16>) {
  %a = kiln.attention %q, %k, %k {causal = true}
      : (tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?x64xf16>) -> tensor<?x?x64xf16>
  %b = kiln.attention %qb, %kb, %kb {causal = true}
      : (tensor<?x?x128xbf16>, tensor<?x?x128xbf16>, tensor<?x?x128xbf16>) -> tensor<?x?x128xbf16>
  return %a, %b : tensor<?x?x64xf16>, tensor<?x?x128xbf16>
}
