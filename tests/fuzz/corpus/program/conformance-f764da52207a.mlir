func.func @main() -> tensor<3x4xi32> {
  %r = "kiln.fill"() {value = 3.0 : f64} : () -> tensor<3x4xi32>
  return %r : tensor<3x4xi32>
}
