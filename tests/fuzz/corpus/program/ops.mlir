func.func @unary(%x: tensor<2x3xf32>, %i: tensor<4xi32>, %b: tensor<4xi1>) {
  %exp = kiln.exp %x : tensor<2x3xf32>
  %log = kiln.log %x : tensor<2x3xf32>
  %log1p = kiln.log1p %x : tensor<2x3xf32>
  %sqrt = kiln.sqrt %x : tensor<2x3xf32>
  %rsqrt = kiln.rsqrt %x : tensor<2x3xf32>
  %recip = kiln.recip %x : tensor<2x3xf32>
  %sin = kiln.sin %x : tensor<2x3xf32>
  %cos = kiln.cos %x : tensor<2x3xf32>
  %tanh = kiln.tanh %x : tensor<2x3xf32>
  %sigmoid = kiln.sigmoid %x : tensor<2x3xf32>
  %erf = kiln.erf %x : tensor<2x3xf32>
  %silu = kiln.silu %x : tensor<2x3xf32>
  %floor = kiln.floor %x : tensor<2x3xf32>
  %ceil = kiln.ceil %x : tensor<2x3xf32>
  %round = kiln.round %x : tensor<2x3xf32>
  %neg = kiln.neg %x : tensor<2x3xf32>
  %abs = kiln.abs %x : tensor<2x3xf32>
  %sign = kiln.sign %x : tensor<2x3xf32>
  %relu = kiln.relu %x : tensor<2x3xf32>
  %neg_i = kiln.neg %i : tensor<4xi32>
  %abs_i = kiln.abs %i : tensor<4xi32>
  %sign_i = kiln.sign %i : tensor<4xi32>
  %relu_i = kiln.relu %i : tensor<4xi32>
  %not = kiln.not %b : tensor<4xi1>
  %gelu = kiln.gelu %x {approximate = "tanh"} : tensor<2x3xf32>
  %gelu2 = kiln.gelu %x : tensor<2x3xf32>
  %clamp = kiln.clamp %x {min = 0.0 : f64, max = 6.0 : f64} : tensor<2x3xf32>
  %isnan = kiln.isnan %x : tensor<2x3xf32> -> tensor<2x3xi1>
  %cast = kiln.cast %x : tensor<2x3xf32> -> tensor<2x3xbf16>
  return
}

func.func @binary(%a: tensor<2x3xf32>, %r: tensor<3xf32>, %i: tensor<2x1xui8>, %j: tensor<1x5xui8>, %c: tensor<2x1xi1>) {
  %add = kiln.add %a, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %sub = kiln.sub %a, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %mul = kiln.mul %a, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %div = kiln.div %a, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %rem = kiln.rem %a, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %max = kiln.max %a, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %min = kiln.min %a, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %pow = kiln.pow %a, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %and = kiln.and %i, %j : (tensor<2x1xui8>, tensor<1x5xui8>) -> tensor<2x5xui8>
  %or = kiln.or %i, %j : (tensor<2x1xui8>, tensor<1x5xui8>) -> tensor<2x5xui8>
  %xor = kiln.xor %i, %j : (tensor<2x1xui8>, tensor<1x5xui8>) -> tensor<2x5xui8>
  %shl = kiln.shl %i, %j : (tensor<2x1xui8>, tensor<1x5xui8>) -> tensor<2x5xui8>
  %shr = kiln.shr %i, %j : (tensor<2x1xui8>, tensor<1x5xui8>) -> tensor<2x5xui8>
  %eq = kiln.eq %a, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %ne = kiln.ne %a, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %lt = kiln.lt %a, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %le = kiln.le %a, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %gt = kiln.gt %a, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %ge = kiln.ge %a, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %sel = kiln.select %c, %a, %r : (tensor<2x1xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return
}

func.func @generators(%seed: tensor<i64>) {
  %f = "kiln.fill"() {value = 3.0 : f64} : () -> tensor<2x2xi32>
  %i = kiln.iota {dim = 1} : tensor<2x5xi64>
  %u = kiln.random_uniform %seed {low = -1.0 : f64, high = 2.0 : f64} : tensor<i64> -> tensor<8xf32>
  %n = kiln.random_normal %seed {mean = 1.0 : f64, std = 2.0 : f64} : tensor<i64> -> tensor<8xf64>
  return
}

func.func @movement(%x: tensor<2x3x4xf16>, %y: tensor<2x5x4xf16>, %idx: tensor<2x3x2xi64>, %sel: tensor<3xi32>, %src: tensor<2x3x4xf16>) {
  %r = kiln.reshape %x : tensor<2x3x4xf16> -> tensor<6x4xf16>
  %b = kiln.broadcast %x : tensor<2x3x4xf16> -> tensor<5x2x3x4xf16>
  %t = kiln.transpose %x {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf16> -> tensor<4x2x3xf16>
  %s = kiln.slice %x {start = array<i64: 0, 1, 0>, stop = array<i64: 2, 3, 4>, step = array<i64: 1, 1, 3>} : tensor<2x3x4xf16> -> tensor<2x2x2xf16>
  %c = kiln.concat %x, %y {dim = 1} : (tensor<2x3x4xf16>, tensor<2x5x4xf16>) -> tensor<2x8x4xf16>
  %p = kiln.pad %x {low = array<i64: 1, 0, 0>, high = array<i64: 0, 0, 2>, value = 1.5 : f64} : tensor<2x3x4xf16> -> tensor<3x3x6xf16>
  %fl = kiln.flip %x {dims = array<i64: 0, 2>} : tensor<2x3x4xf16> -> tensor<2x3x4xf16>
  %g = kiln.gather %x, %idx {dim = 2} : (tensor<2x3x4xf16>, tensor<2x3x2xi64>) -> tensor<2x3x2xf16>
  %is = kiln.index_select %x, %sel {dim = 2} : (tensor<2x3x4xf16>, tensor<3xi32>) -> tensor<2x3x3xf16>
  %sa = kiln.scatter_add %x, %idx, %src {dim = 2} : (tensor<2x3x4xf16>, tensor<2x3x2xi64>, tensor<2x3x4xf16>) -> tensor<2x3x4xf16>
  return
}

func.func @reductions(%x: tensor<4x5xbf16>, %b: tensor<4x5xi1>) {
  %reduce_sum = kiln.reduce_sum %x {dims = array<i64: 1>} : tensor<4x5xbf16> -> tensor<4xbf16>
  %reduce_prod = kiln.reduce_prod %x {dims = array<i64: 1>} : tensor<4x5xbf16> -> tensor<4xbf16>
  %reduce_mean = kiln.reduce_mean %x {dims = array<i64: 1>} : tensor<4x5xbf16> -> tensor<4xbf16>
  %reduce_max = kiln.reduce_max %x {dims = array<i64: 1>} : tensor<4x5xbf16> -> tensor<4xbf16>
  %reduce_min = kiln.reduce_min %x {dims = array<i64: 1>} : tensor<4x5xbf16> -> tensor<4xbf16>
  %reduce_any = kiln.reduce_any %b {dims = array<i64: 0, 1>, keep_dims = true} : tensor<4x5xi1> -> tensor<1x1xi1>
  %reduce_all = kiln.reduce_all %b {dims = array<i64: 0, 1>, keep_dims = true} : tensor<4x5xi1> -> tensor<1x1xi1>
  %argmax = kiln.argmax %x {dim = 0} : tensor<4x5xbf16> -> tensor<5xi64>
  %argmin = kiln.argmin %x {dim = 0} : tensor<4x5xbf16> -> tensor<5xi64>
  %cumsum = kiln.cumsum %x {dim = 1} : tensor<4x5xbf16>
  %softmax = kiln.softmax %x {dim = 1} : tensor<4x5xbf16>
  %log_softmax = kiln.log_softmax %x {dim = 1} : tensor<4x5xbf16>
  return
}

func.func @contractions(%a: tensor<3x1x4x8xf16>, %b: tensor<5x8x2xf16>, %x: tensor<4x8xf32>, %w: tensor<8xf32>) {
  %m = kiln.matmul %a, %b : (tensor<3x1x4x8xf16>, tensor<5x8x2xf16>) -> tensor<3x5x4x2xf32>
  %ln = kiln.layer_norm %x, %w, %w {eps = 1.0e-3 : f64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %rn = kiln.rms_norm %x, %w : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return
}

func.func @quantization(%x: tensor<4x32xf32>, %s: tensor<f32>, %sb: tensor<4x2xbf16>) {
  %q = kiln.quantize %x, %s : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xi8>
  %qb = kiln.quantize %x, %sb {block_size = 16} : (tensor<4x32xf32>, tensor<4x2xbf16>) -> tensor<4x32xi8>
  %d = kiln.dequantize %qb, %sb {block_size = 16} : (tensor<4x32xi8>, tensor<4x2xbf16>) -> tensor<4x32xf16>
  return
}
