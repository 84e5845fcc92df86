func.func @f8_arith(%x: tensor<4xf8E4M3FN>) {
  %r = kiln.neg %x : tensor<4xf8E4M3FN>
  return
}
