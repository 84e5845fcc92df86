func.func @main() -> tensor<3x4xf32> {
  %r = kiln.iota {dim = 1} : tensor<3x4xf32>
  return %r : tensor<3x4xf32>
}
