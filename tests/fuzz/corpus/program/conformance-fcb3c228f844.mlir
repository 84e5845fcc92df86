func.func @main(%a0: tensor<300x203xf32>, %a1: tensor<203x260xf32>) -> tensor<300x260xf32> {
  %r = kiln.matmul %a0, %a1 : (tensor<300x203xf32>, tensor<203x260xf32>) -> tensor<300x260xf32>
  return %r : tensor<300x260xf32>
}
