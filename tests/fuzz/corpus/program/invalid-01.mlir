func.func @f1(%x: tensor<4xui8>) {
  %r = kiln.neg %x : tensor<4xui8>
  return
}
