func.func @f7(%x: tensor<4xf32>) {
  %r = kiln.clamp %x {min = 2.0 : f64, max = 1.0 : f64} : tensor<4xf32>
  return
}
