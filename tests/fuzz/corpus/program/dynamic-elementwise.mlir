func.func @main(%x: tensor<?x?xf32>, %b: tensor<?xf32>, %c: tensor<?x1xf32>)
    -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  %a = kiln.add %x, %b : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
  %m = kiln.mul %a, %c : (tensor<?x?xf32>, tensor<?x1xf32>) -> tensor<?x?xf32>
  %e = kiln.exp %m : tensor<?x?xf32>
  %t = kiln.transpose %e {perm = array<i64: 1, 0>} : tensor<?x?xf32> -> tensor<?x?xf32>
  return %m, %t : tensor<?x?xf32>, tensor<?x?xf32>
}
