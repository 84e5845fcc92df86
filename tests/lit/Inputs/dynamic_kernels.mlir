// Kernels of every kind in the slice of ops that take `?` dims
// (docs/dynamic-shapes.md): elementwise with broadcasting, row reductions
// (softmax, layer_norm), reductions, matmul, transpose, reshape, scans
// (cumsum: blocked, and a thread per short row), flip, argmax over `?` rows,
// gather, quantize per block.
func.func @main(%x: tensor<?x?xf32>, %b: tensor<?xf32>, %w: tensor<?xf32>,
                %m: tensor<?x?xf32>, %r: tensor<?x4x8xf32>, %y: tensor<?x300xf32>,
                %g: tensor<?x3xi32>, %sb: tensor<?x3xf32>)
    -> (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xf32>, tensor<?x?xf32>, tensor<?x?xf32>,
        tensor<?x32xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xi64>, tensor<?x3xf32>,
        tensor<?x300xi8>) {
  %a = kiln.add %x, %b : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
  %s = kiln.softmax %a {dim = 1} : tensor<?x?xf32>
  %n = kiln.layer_norm %x, %w, %b : (tensor<?x?xf32>, tensor<?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
  %sum = kiln.reduce_mean %x {dims = array<i64: 1>} : tensor<?x?xf32> -> tensor<?xf32>
  %mm = kiln.matmul %x, %m : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  %t = kiln.transpose %x {perm = array<i64: 1, 0>} : tensor<?x?xf32> -> tensor<?x?xf32>
  %rr = kiln.reshape %r : tensor<?x4x8xf32> -> tensor<?x32xf32>
  %c = kiln.cumsum %x {dim = 1} : tensor<?x?xf32>
  %f = kiln.flip %x {dims = array<i64: 1>} : tensor<?x?xf32> -> tensor<?x?xf32>
  %am = kiln.argmax %y {dim = 1} : tensor<?x300xf32> -> tensor<?xi64>
  %ga = kiln.gather %y, %g {dim = 1} : (tensor<?x300xf32>, tensor<?x3xi32>) -> tensor<?x3xf32>
  %qb = kiln.quantize %y, %sb {block_size = 100} : (tensor<?x300xf32>, tensor<?x3xf32>) -> tensor<?x300xi8>
  return %s, %n, %sum, %mm, %t, %rr, %c, %f, %am, %ga, %qb : tensor<?x?xf32>, tensor<?x?xf32>,
      tensor<?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x32xf32>, tensor<?x?xf32>,
      tensor<?x?xf32>, tensor<?xi64>, tensor<?x3xf32>, tensor<?x300xi8>
}
