func.func @main(%x: tensor<?x4x8xi32>) -> tensor<?x32xi32> {
  %r = kiln.reshape %x : tensor<?x4x8xi32> -> tensor<?x32xi32>
  return %r : tensor<?x32xi32>
}
