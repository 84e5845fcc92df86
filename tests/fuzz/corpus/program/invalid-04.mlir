func.func @f4(%x: tensor<4xsi32>) {
  %r = kiln.neg %x : tensor<4xsi32>
  return
}
