// Kernels of every kind in the slice of ops that take `?` dims
// (docs/dynamic-shapes.md): elementwise with broadcasting, row reductions
// (softmax, layer_norm), reductions, matmul, transpose, reshape, scans
// (cumsum: blocked, and a thread per short row), flip, argmax over `?` rows,
// gather, quantize per block, max_pool2d over `?` images, concat, pad (along
// static and `?` dims), slice of `?` rows, scatter_add (atomic adds).
func.func @main(%x: tensor<?x?xf32>, %b: tensor<?xf32>, %w: tensor<?xf32>,
                %m: tensor<?x?xf32>, %r: tensor<?x4x8xf32>, %y: tensor<?x300xf32>,
                %g: tensor<?x3xi32>, %sb: tensor<?x3xf32>,
                %img: tensor<?x3x9x9xf32>, %sx: tensor<?x6xf32>, %si: tensor<?x?xi32>,
                %ss: tensor<?x?xf32>)
    -> (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xf32>, tensor<?x?xf32>, tensor<?x?xf32>,
        tensor<?x32xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xi64>, tensor<?x3xf32>,
        tensor<?x300xi8>, tensor<?x3x4x4xf32>, tensor<?x306xf32>, tensor<?x6xf32>,
        tensor<?x?xf32>, tensor<2x300xf32>) {
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
  %mp = kiln.max_pool2d %img {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>}
      : tensor<?x3x9x9xf32> -> tensor<?x3x4x4xf32>
  %cc = kiln.concat %y, %ga {dim = 1} : (tensor<?x300xf32>, tensor<?x3xf32>) -> tensor<?x303xf32>
  %pd = kiln.pad %cc {low = array<i64: 0, 1>, high = array<i64: 0, 2>} : tensor<?x303xf32> -> tensor<?x306xf32>
  %sa = kiln.scatter_add %sx, %si, %ss {dim = 1}
      : (tensor<?x6xf32>, tensor<?x?xi32>, tensor<?x?xf32>) -> tensor<?x6xf32>
  %cr = kiln.concat %x, %f {dim = 0} : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  %pr = kiln.pad %cr {low = array<i64: 1, 0>, high = array<i64: 2, 0>} : tensor<?x?xf32> -> tensor<?x?xf32>
  %sl = kiln.slice %y {start = array<i64: 1, 0>, stop = array<i64: 3, 300>} : tensor<?x300xf32> -> tensor<2x300xf32>
  return %s, %n, %sum, %mm, %t, %rr, %c, %f, %am, %ga, %qb, %mp, %pd, %sa, %pr, %sl : tensor<?x?xf32>,
      tensor<?x?xf32>, tensor<?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x32xf32>,
      tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xi64>, tensor<?x3xf32>, tensor<?x300xi8>,
      tensor<?x3x4x4xf32>, tensor<?x306xf32>, tensor<?x6xf32>, tensor<?x?xf32>, tensor<2x300xf32>
}
