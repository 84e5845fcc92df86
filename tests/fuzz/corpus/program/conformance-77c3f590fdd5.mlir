func.func @main(%x: tensor<262xf32>) -> tensor<262xf32> {
  %0 = kiln.cast %x : tensor<262xf32> -> tensor<262xf8E5M2>
  %1 = kiln.transpose %0 {perm = array<i64: 0>} : tensor<262xf8E5M2> -> tensor<262xf8E5M2>
  %2 = kiln.cast %1 : tensor<262xf8E5M2> -> tensor<262xf32>
  return %2 : tensor<262xf32>
}
