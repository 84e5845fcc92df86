func.func @main() -> tensor<3xf32> {
  %0 = "kiln.fill"() {value = 2.6 : f64} : () -> tensor<3xf8E5M2>
  %1 = kiln.cast %0 : tensor<3xf8E5M2> -> tensor<3xf32>
  return %1 : tensor<3xf32>
}
