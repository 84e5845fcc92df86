func.func @f3(%x: tensor<4xi7>) {
  %r = kiln.neg %x : tensor<4xi7>
  return
}
