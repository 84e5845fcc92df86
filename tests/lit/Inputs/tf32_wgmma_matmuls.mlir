// f32 matmuls the sm_90a kernel takes as tf32 (--tf32): odd M with a K
// edge (36: a partial 32-element step) and bias + relu fused, and every
// dim `?`.
func.func @main(%a: tensor<300x36xf32>, %b: tensor<36x264xf32>, %bias: tensor<264xf32>,
                %h: tensor<?x?xf32>, %g: tensor<?x?xf32>)
    -> (tensor<300x264xf32>, tensor<?x?xf32>) {
  %0 = kiln.matmul %a, %b : (tensor<300x36xf32>, tensor<36x264xf32>) -> tensor<300x264xf32>
  %1 = kiln.add %0, %bias : (tensor<300x264xf32>, tensor<264xf32>) -> tensor<300x264xf32>
  %2 = kiln.relu %1 : tensor<300x264xf32>
  %3 = kiln.matmul %h, %g : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  return %2, %3 : tensor<300x264xf32>, tensor<?x?xf32>
}
