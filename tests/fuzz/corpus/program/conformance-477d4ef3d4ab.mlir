func.func @main(%a0: tensor<3x5x37xui8>) -> tensor<3x5xui8> {
  %r = kiln.reduce_prod %a0 {dims = array<i64: 2>} : tensor<3x5x37xui8> -> tensor<3x5xui8>
  return %r : tensor<3x5xui8>
}
