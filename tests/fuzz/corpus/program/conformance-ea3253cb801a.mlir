func.func @main(%a0: tensor<2x130x21xf32>, %a1: tensor<2x21x257xf32>) -> tensor<2x130x257xf32> {
  %r = kiln.matmul %a0, %a1 : (tensor<2x130x21xf32>, tensor<2x21x257xf32>) -> tensor<2x130x257xf32>
  return %r : tensor<2x130x257xf32>
}
