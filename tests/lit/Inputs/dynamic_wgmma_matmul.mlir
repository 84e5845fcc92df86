// A bf16 matmul with a bias, every dim `?` (ptxas-wgmma.test).
func.func @main(%a: tensor<?x?xbf16>, %b: tensor<?x?xbf16>, %bias: tensor<?xf32>) -> tensor<?x?xf32> {
  %m = kiln.matmul %a, %b : (tensor<?x?xbf16>, tensor<?x?xbf16>) -> tensor<?x?xf32>
  %s = kiln.add %m, %bias : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
  return %s : tensor<?x?xf32>
}
