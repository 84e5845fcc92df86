func.func @main(%a: tensor<16xi8>, %b: tensor<16xi8>, %c: tensor<16xf16>) -> (tensor<16xi8>, tensor<16xf16>) {
  %0 = kiln.add %a, %b : (tensor<16xi8>, tensor<16xi8>) -> tensor<16xi8>
  %1 = kiln.mul %c, %c : (tensor<16xf16>, tensor<16xf16>) -> tensor<16xf16>
  return %0, %1 : tensor<16xi8>, tensor<16xf16>
}
