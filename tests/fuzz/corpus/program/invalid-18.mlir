func.func @f18(%x: tensor<4xi1>, %y: tensor<4xi1>) {
  %r = kiln.shl %x, %y : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  return
}
