// RUN: kiln-opt %s | kiln-opt | FileCheck %s
// RUN: kiln-opt %s --mlir-print-op-generic | kiln-opt | FileCheck %s
// Round trip of every kiln op, in custom and generic form.

// CHECK-LABEL: func @unary
func.func @unary(%x: tensor<2x3xf32>, %i: tensor<4xi32>, %b: tensor<4xi1>) {
  // CHECK: kiln.exp %{{.*}} : tensor<2x3xf32>
  %exp = kiln.exp %x : tensor<2x3xf32>
  // CHECK: kiln.log %{{.*}} : tensor<2x3xf32>
  %log = kiln.log %x : tensor<2x3xf32>
  // CHECK: kiln.log1p %{{.*}} : tensor<2x3xf32>
  %log1p = kiln.log1p %x : tensor<2x3xf32>
  // CHECK: kiln.sqrt %{{.*}} : tensor<2x3xf32>
  %sqrt = kiln.sqrt %x : tensor<2x3xf32>
  // CHECK: kiln.rsqrt %{{.*}} : tensor<2x3xf32>
  %rsqrt = kiln.rsqrt %x : tensor<2x3xf32>
  // CHECK: kiln.recip %{{.*}} : tensor<2x3xf32>
  %recip = kiln.recip %x : tensor<2x3xf32>
  // CHECK: kiln.sin %{{.*}} : tensor<2x3xf32>
  %sin = kiln.sin %x : tensor<2x3xf32>
  // CHECK: kiln.cos %{{.*}} : tensor<2x3xf32>
  %cos = kiln.cos %x : tensor<2x3xf32>
  // CHECK: kiln.tanh %{{.*}} : tensor<2x3xf32>
  %tanh = kiln.tanh %x : tensor<2x3xf32>
  // CHECK: kiln.sigmoid %{{.*}} : tensor<2x3xf32>
  %sigmoid = kiln.sigmoid %x : tensor<2x3xf32>
  // CHECK: kiln.erf %{{.*}} : tensor<2x3xf32>
  %erf = kiln.erf %x : tensor<2x3xf32>
  // CHECK: kiln.silu %{{.*}} : tensor<2x3xf32>
  %silu = kiln.silu %x : tensor<2x3xf32>
  // CHECK: kiln.floor %{{.*}} : tensor<2x3xf32>
  %floor = kiln.floor %x : tensor<2x3xf32>
  // CHECK: kiln.ceil %{{.*}} : tensor<2x3xf32>
  %ceil = kiln.ceil %x : tensor<2x3xf32>
  // CHECK: kiln.round %{{.*}} : tensor<2x3xf32>
  %round = kiln.round %x : tensor<2x3xf32>
  // CHECK: kiln.neg %{{.*}} : tensor<2x3xf32>
  %neg = kiln.neg %x : tensor<2x3xf32>
  // CHECK: kiln.abs %{{.*}} : tensor<2x3xf32>
  %abs = kiln.abs %x : tensor<2x3xf32>
  // CHECK: kiln.sign %{{.*}} : tensor<2x3xf32>
  %sign = kiln.sign %x : tensor<2x3xf32>
  // CHECK: kiln.relu %{{.*}} : tensor<2x3xf32>
  %relu = kiln.relu %x : tensor<2x3xf32>
  // CHECK: kiln.neg %{{.*}} : tensor<4xi32>
  %neg_i = kiln.neg %i : tensor<4xi32>
  // CHECK: kiln.abs %{{.*}} : tensor<4xi32>
  %abs_i = kiln.abs %i : tensor<4xi32>
  // CHECK: kiln.sign %{{.*}} : tensor<4xi32>
  %sign_i = kiln.sign %i : tensor<4xi32>
  // CHECK: kiln.relu %{{.*}} : tensor<4xi32>
  %relu_i = kiln.relu %i : tensor<4xi32>
  // CHECK: kiln.not %{{.*}} : tensor<4xi1>
  %not = kiln.not %b : tensor<4xi1>
  // CHECK: kiln.gelu %{{.*}} {approximate = "tanh"} : tensor<2x3xf32>
  %gelu = kiln.gelu %x {approximate = "tanh"} : tensor<2x3xf32>
  // CHECK: kiln.gelu %{{.*}} : tensor<2x3xf32>
  %gelu2 = kiln.gelu %x : tensor<2x3xf32>
  // CHECK: kiln.clamp %{{.*}} {max = 6.000000e+00 : f64, min = 0.000000e+00 : f64} : tensor<2x3xf32>
  %clamp = kiln.clamp %x {min = 0.0 : f64, max = 6.0 : f64} : tensor<2x3xf32>
  // CHECK: kiln.isnan %{{.*}} : tensor<2x3xf32> -> tensor<2x3xi1>
  %isnan = kiln.isnan %x : tensor<2x3xf32> -> tensor<2x3xi1>
  // CHECK: kiln.cast %{{.*}} : tensor<2x3xf32> -> tensor<2x3xbf16>
  %cast = kiln.cast %x : tensor<2x3xf32> -> tensor<2x3xbf16>
  return
}

// CHECK-LABEL: func @binary
func.func @binary(%a: tensor<2x3xf32>, %r: tensor<3xf32>, %i: tensor<2x1xui8>, %j: tensor<1x5xui8>, %c: tensor<2x1xi1>) {
  // CHECK: kiln.add %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %add = kiln.add %a, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: kiln.sub %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %sub = kiln.sub %a, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: kiln.mul %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %mul = kiln.mul %a, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: kiln.div %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %div = kiln.div %a, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: kiln.rem %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %rem = kiln.rem %a, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: kiln.max %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %max = kiln.max %a, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: kiln.min %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %min = kiln.min %a, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: kiln.pow %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %pow = kiln.pow %a, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: kiln.and %{{.*}}, %{{.*}} : (tensor<2x1xui8>, tensor<1x5xui8>) -> tensor<2x5xui8>
  %and = kiln.and %i, %j : (tensor<2x1xui8>, tensor<1x5xui8>) -> tensor<2x5xui8>
  // CHECK: kiln.or %{{.*}}, %{{.*}} : (tensor<2x1xui8>, tensor<1x5xui8>) -> tensor<2x5xui8>
  %or = kiln.or %i, %j : (tensor<2x1xui8>, tensor<1x5xui8>) -> tensor<2x5xui8>
  // CHECK: kiln.xor %{{.*}}, %{{.*}} : (tensor<2x1xui8>, tensor<1x5xui8>) -> tensor<2x5xui8>
  %xor = kiln.xor %i, %j : (tensor<2x1xui8>, tensor<1x5xui8>) -> tensor<2x5xui8>
  // CHECK: kiln.shl %{{.*}}, %{{.*}} : (tensor<2x1xui8>, tensor<1x5xui8>) -> tensor<2x5xui8>
  %shl = kiln.shl %i, %j : (tensor<2x1xui8>, tensor<1x5xui8>) -> tensor<2x5xui8>
  // CHECK: kiln.shr %{{.*}}, %{{.*}} : (tensor<2x1xui8>, tensor<1x5xui8>) -> tensor<2x5xui8>
  %shr = kiln.shr %i, %j : (tensor<2x1xui8>, tensor<1x5xui8>) -> tensor<2x5xui8>
  // CHECK: kiln.eq %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %eq = kiln.eq %a, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  // CHECK: kiln.ne %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %ne = kiln.ne %a, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  // CHECK: kiln.lt %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %lt = kiln.lt %a, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  // CHECK: kiln.le %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %le = kiln.le %a, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  // CHECK: kiln.gt %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %gt = kiln.gt %a, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  // CHECK: kiln.ge %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %ge = kiln.ge %a, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  // CHECK: kiln.select %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x1xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %sel = kiln.select %c, %a, %r : (tensor<2x1xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return
}

// CHECK-LABEL: func @generators
func.func @generators(%seed: tensor<i64>) {
  // CHECK: kiln.fill {value = 3.000000e+00 : f64} : tensor<2x2xi32>
  %f = "kiln.fill"() {value = 3.0 : f64} : () -> tensor<2x2xi32>
  // CHECK: kiln.iota {dim = 1 : i64} : tensor<2x5xi64>
  %i = kiln.iota {dim = 1} : tensor<2x5xi64>
  // CHECK: kiln.random_uniform %{{.*}} {high = 2.000000e+00 : f64, low = -1.000000e+00 : f64} : tensor<i64> -> tensor<8xf32>
  %u = kiln.random_uniform %seed {low = -1.0 : f64, high = 2.0 : f64} : tensor<i64> -> tensor<8xf32>
  // CHECK: kiln.random_normal %{{.*}} {mean = 1.000000e+00 : f64, std = 2.000000e+00 : f64} : tensor<i64> -> tensor<8xf64>
  %n = kiln.random_normal %seed {mean = 1.0 : f64, std = 2.0 : f64} : tensor<i64> -> tensor<8xf64>
  return
}

// CHECK-LABEL: func @movement
func.func @movement(%x: tensor<2x3x4xf16>, %y: tensor<2x5x4xf16>, %idx: tensor<2x3x2xi64>, %sel: tensor<3xi32>, %src: tensor<2x3x4xf16>) {
  // CHECK: kiln.reshape %{{.*}} : tensor<2x3x4xf16> -> tensor<6x4xf16>
  %r = kiln.reshape %x : tensor<2x3x4xf16> -> tensor<6x4xf16>
  // CHECK: kiln.broadcast %{{.*}} : tensor<2x3x4xf16> -> tensor<5x2x3x4xf16>
  %b = kiln.broadcast %x : tensor<2x3x4xf16> -> tensor<5x2x3x4xf16>
  // CHECK: kiln.transpose %{{.*}} {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf16> -> tensor<4x2x3xf16>
  %t = kiln.transpose %x {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf16> -> tensor<4x2x3xf16>
  // CHECK: kiln.slice %{{.*}} {start = array<i64: 0, 1, 0>, step = array<i64: 1, 1, 3>, stop = array<i64: 2, 3, 4>} : tensor<2x3x4xf16> -> tensor<2x2x2xf16>
  %s = kiln.slice %x {start = array<i64: 0, 1, 0>, stop = array<i64: 2, 3, 4>, step = array<i64: 1, 1, 3>} : tensor<2x3x4xf16> -> tensor<2x2x2xf16>
  // CHECK: kiln.concat %{{.*}}, %{{.*}} {dim = 1 : i64} : (tensor<2x3x4xf16>, tensor<2x5x4xf16>) -> tensor<2x8x4xf16>
  %c = kiln.concat %x, %y {dim = 1} : (tensor<2x3x4xf16>, tensor<2x5x4xf16>) -> tensor<2x8x4xf16>
  // CHECK: kiln.pad %{{.*}} {high = array<i64: 0, 0, 2>, low = array<i64: 1, 0, 0>, value = 1.500000e+00 : f64} : tensor<2x3x4xf16> -> tensor<3x3x6xf16>
  %p = kiln.pad %x {low = array<i64: 1, 0, 0>, high = array<i64: 0, 0, 2>, value = 1.5 : f64} : tensor<2x3x4xf16> -> tensor<3x3x6xf16>
  // CHECK: kiln.flip %{{.*}} {dims = array<i64: 0, 2>} : tensor<2x3x4xf16> -> tensor<2x3x4xf16>
  %fl = kiln.flip %x {dims = array<i64: 0, 2>} : tensor<2x3x4xf16> -> tensor<2x3x4xf16>
  // CHECK: kiln.gather %{{.*}}, %{{.*}} {dim = 2 : i64} : (tensor<2x3x4xf16>, tensor<2x3x2xi64>) -> tensor<2x3x2xf16>
  %g = kiln.gather %x, %idx {dim = 2} : (tensor<2x3x4xf16>, tensor<2x3x2xi64>) -> tensor<2x3x2xf16>
  // CHECK: kiln.index_select %{{.*}}, %{{.*}} {dim = 2 : i64} : (tensor<2x3x4xf16>, tensor<3xi32>) -> tensor<2x3x3xf16>
  %is = kiln.index_select %x, %sel {dim = 2} : (tensor<2x3x4xf16>, tensor<3xi32>) -> tensor<2x3x3xf16>
  // CHECK: kiln.scatter_add %{{.*}}, %{{.*}}, %{{.*}} {dim = 2 : i64} : (tensor<2x3x4xf16>, tensor<2x3x2xi64>, tensor<2x3x4xf16>) -> tensor<2x3x4xf16>
  %sa = kiln.scatter_add %x, %idx, %src {dim = 2} : (tensor<2x3x4xf16>, tensor<2x3x2xi64>, tensor<2x3x4xf16>) -> tensor<2x3x4xf16>
  return
}

// A step beyond the dim takes its first element.
// CHECK-LABEL: func @huge_step
func.func @huge_step(%x: tensor<4xf32>) {
  // CHECK: kiln.slice {{.*}} -> tensor<1xf32>
  %s = kiln.slice %x {start = array<i64: 0>, stop = array<i64: 4>, step = array<i64: 9223372036854775807>} : tensor<4xf32> -> tensor<1xf32>
  return
}

// An empty dim may be indexed by an empty index: nothing is read or written.
// CHECK-LABEL: func @empty_lookups
func.func @empty_lookups(%x: tensor<4x0xf32>, %idx: tensor<4x0xi64>, %sel: tensor<0xi32>) {
  // CHECK: kiln.gather
  %g = kiln.gather %x, %idx {dim = 1} : (tensor<4x0xf32>, tensor<4x0xi64>) -> tensor<4x0xf32>
  // CHECK: kiln.index_select
  %is = kiln.index_select %x, %sel {dim = 1} : (tensor<4x0xf32>, tensor<0xi32>) -> tensor<4x0xf32>
  // CHECK: kiln.scatter_add
  %sa = kiln.scatter_add %x, %idx, %x {dim = 1} : (tensor<4x0xf32>, tensor<4x0xi64>, tensor<4x0xf32>) -> tensor<4x0xf32>
  return
}

// CHECK-LABEL: func @reductions
func.func @reductions(%x: tensor<4x5xbf16>, %b: tensor<4x5xi1>) {
  // CHECK: kiln.reduce_sum %{{.*}} {dims = array<i64: 1>} : tensor<4x5xbf16> -> tensor<4xbf16>
  %reduce_sum = kiln.reduce_sum %x {dims = array<i64: 1>} : tensor<4x5xbf16> -> tensor<4xbf16>
  // CHECK: kiln.reduce_prod %{{.*}} {dims = array<i64: 1>} : tensor<4x5xbf16> -> tensor<4xbf16>
  %reduce_prod = kiln.reduce_prod %x {dims = array<i64: 1>} : tensor<4x5xbf16> -> tensor<4xbf16>
  // CHECK: kiln.reduce_mean %{{.*}} {dims = array<i64: 1>} : tensor<4x5xbf16> -> tensor<4xbf16>
  %reduce_mean = kiln.reduce_mean %x {dims = array<i64: 1>} : tensor<4x5xbf16> -> tensor<4xbf16>
  // CHECK: kiln.reduce_max %{{.*}} {dims = array<i64: 1>} : tensor<4x5xbf16> -> tensor<4xbf16>
  %reduce_max = kiln.reduce_max %x {dims = array<i64: 1>} : tensor<4x5xbf16> -> tensor<4xbf16>
  // CHECK: kiln.reduce_min %{{.*}} {dims = array<i64: 1>} : tensor<4x5xbf16> -> tensor<4xbf16>
  %reduce_min = kiln.reduce_min %x {dims = array<i64: 1>} : tensor<4x5xbf16> -> tensor<4xbf16>
  // CHECK: kiln.reduce_any %{{.*}} {dims = array<i64: 0, 1>, keep_dims = true} : tensor<4x5xi1> -> tensor<1x1xi1>
  %reduce_any = kiln.reduce_any %b {dims = array<i64: 0, 1>, keep_dims = true} : tensor<4x5xi1> -> tensor<1x1xi1>
  // CHECK: kiln.reduce_all %{{.*}} {dims = array<i64: 0, 1>, keep_dims = true} : tensor<4x5xi1> -> tensor<1x1xi1>
  %reduce_all = kiln.reduce_all %b {dims = array<i64: 0, 1>, keep_dims = true} : tensor<4x5xi1> -> tensor<1x1xi1>
  // CHECK: kiln.argmax %{{.*}} {dim = 0 : i64} : tensor<4x5xbf16> -> tensor<5xi64>
  %argmax = kiln.argmax %x {dim = 0} : tensor<4x5xbf16> -> tensor<5xi64>
  // CHECK: kiln.argmin %{{.*}} {dim = 0 : i64} : tensor<4x5xbf16> -> tensor<5xi64>
  %argmin = kiln.argmin %x {dim = 0} : tensor<4x5xbf16> -> tensor<5xi64>
  // CHECK: kiln.cumsum %{{.*}} {dim = 1 : i64} : tensor<4x5xbf16>
  %cumsum = kiln.cumsum %x {dim = 1} : tensor<4x5xbf16>
  // CHECK: kiln.softmax %{{.*}} {dim = 1 : i64} : tensor<4x5xbf16>
  %softmax = kiln.softmax %x {dim = 1} : tensor<4x5xbf16>
  // CHECK: kiln.log_softmax %{{.*}} {dim = 1 : i64} : tensor<4x5xbf16>
  %log_softmax = kiln.log_softmax %x {dim = 1} : tensor<4x5xbf16>
  return
}

// CHECK-LABEL: func @contractions
func.func @contractions(%a: tensor<3x1x4x8xf16>, %b: tensor<5x8x2xf16>, %x: tensor<4x8xf32>, %w: tensor<8xf32>) {
  // CHECK: kiln.matmul %{{.*}}, %{{.*}} : (tensor<3x1x4x8xf16>, tensor<5x8x2xf16>) -> tensor<3x5x4x2xf32>
  %m = kiln.matmul %a, %b : (tensor<3x1x4x8xf16>, tensor<5x8x2xf16>) -> tensor<3x5x4x2xf32>
  // E4M3 times E5M2, as torch._scaled_mm takes them.
  // CHECK: kiln.matmul %{{.*}}, %{{.*}} : (tensor<4x8xf8E4M3FN>, tensor<8x2xf8E5M2>) -> tensor<4x2xbf16>
  %e4 = kiln.cast %x : tensor<4x8xf32> -> tensor<4x8xf8E4M3FN>
  %e5 = "kiln.fill"() {value = 1.0 : f64} : () -> tensor<8x2xf8E5M2>
  %f8 = kiln.matmul %e4, %e5 : (tensor<4x8xf8E4M3FN>, tensor<8x2xf8E5M2>) -> tensor<4x2xbf16>
  // CHECK: kiln.layer_norm %{{.*}}, %{{.*}}, %{{.*}} {eps = 1.000000e-03 : f64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %ln = kiln.layer_norm %x, %w, %w {eps = 1.0e-3 : f64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: kiln.rms_norm %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %rn = kiln.rms_norm %x, %w : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// CHECK-LABEL: func @quantization
func.func @quantization(%x: tensor<4x32xf32>, %s: tensor<f32>, %sb: tensor<4x2xbf16>) {
  // CHECK: kiln.quantize %{{.*}}, %{{.*}} : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xi8>
  %q = kiln.quantize %x, %s : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xi8>
  // CHECK: kiln.quantize %{{.*}}, %{{.*}} {block_size = 16 : i64} : (tensor<4x32xf32>, tensor<4x2xbf16>) -> tensor<4x32xi8>
  %qb = kiln.quantize %x, %sb {block_size = 16} : (tensor<4x32xf32>, tensor<4x2xbf16>) -> tensor<4x32xi8>
  // CHECK: kiln.dequantize %{{.*}}, %{{.*}} {block_size = 16 : i64} : (tensor<4x32xi8>, tensor<4x2xbf16>) -> tensor<4x32xf16>
  %d = kiln.dequantize %qb, %sb {block_size = 16} : (tensor<4x32xi8>, tensor<4x2xbf16>) -> tensor<4x32xf16>
  return
}

// CHECK-LABEL: func @windows_and_attention
func.func @windows_and_attention(%x: tensor<2x4x9x9xf32>, %w: tensor<6x2x3x3xf32>, %b: tensor<6xf32>, %w1: tensor<4x4x1x1xf32>,
                                 %q: tensor<2x5x8xbf16>, %k: tensor<2x7x8xbf16>, %v: tensor<2x7x3xbf16>, %m: tensor<5x7xi1>) {
  // CHECK: kiln.conv2d %{{.*}}, %{{.*}}, %{{.*}} {dilation = array<i64: 2, 1>, groups = 2 : i64, padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : (tensor<2x4x9x9xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<2x6x4x5xf32>
  %c = kiln.conv2d %x, %w, %b {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 2, 1>, groups = 2 : i64} : (tensor<2x4x9x9xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<2x6x4x5xf32>
  // CHECK: kiln.conv2d %{{.*}}, %{{.*}} : (tensor<2x4x9x9xf32>, tensor<4x4x1x1xf32>) -> tensor<2x4x9x9xf32>
  %c1 = kiln.conv2d %x, %w1 : (tensor<2x4x9x9xf32>, tensor<4x4x1x1xf32>) -> tensor<2x4x9x9xf32>
  // CHECK: kiln.max_pool2d %{{.*}} {kernel = array<i64: 3, 3>, padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : tensor<2x4x9x9xf32> -> tensor<2x4x5x5xf32>
  %mp = kiln.max_pool2d %x {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : tensor<2x4x9x9xf32> -> tensor<2x4x5x5xf32>
  // CHECK: kiln.avg_pool2d %{{.*}} {kernel = array<i64: 2, 4>} : tensor<2x4x9x9xf32> -> tensor<2x4x4x2xf32>
  %ap = kiln.avg_pool2d %x {kernel = array<i64: 2, 4>} : tensor<2x4x9x9xf32> -> tensor<2x4x4x2xf32>
  // CHECK: kiln.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {causal = true, scale = 5.000000e-01 : f64} : (tensor<2x5x8xbf16>, tensor<2x7x8xbf16>, tensor<2x7x3xbf16>, tensor<5x7xi1>) -> tensor<2x5x3xbf16>
  %at = kiln.attention %q, %k, %v, %m {causal = true, scale = 0.5 : f64} : (tensor<2x5x8xbf16>, tensor<2x7x8xbf16>, tensor<2x7x3xbf16>, tensor<5x7xi1>) -> tensor<2x5x3xbf16>
  // CHECK: kiln.attention %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x5x8xbf16>, tensor<2x7x8xbf16>, tensor<2x7x3xbf16>) -> tensor<2x5x3xbf16>
  %a2 = kiln.attention %q, %k, %v : (tensor<2x5x8xbf16>, tensor<2x7x8xbf16>, tensor<2x7x3xbf16>) -> tensor<2x5x3xbf16>
  return
}
