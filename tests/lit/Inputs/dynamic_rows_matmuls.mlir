// A decode step's matmuls, their rows alone `?`: bf16 (wgmma on sm_90a)
// and f32 (the SIMT kernel; wgmma with --tf32).
func.func @main(%x: tensor<?x4096xbf16>, %w: tensor<4096x4096xbf16>, %y: tensor<?x4096xf32>,
                %v: tensor<4096x1024xf32>) -> (tensor<?x4096xbf16>, tensor<?x1024xf32>) {
  %a = kiln.matmul %x, %w : (tensor<?x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<?x4096xbf16>
  %b = kiln.matmul %y, %v : (tensor<?x4096xf32>, tensor<4096x1024xf32>) -> tensor<?x1024xf32>
  return %a, %b : tensor<?x4096xbf16>, tensor<?x1024xf32>
}
