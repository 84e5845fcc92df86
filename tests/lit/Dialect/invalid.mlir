// RUN: kiln-opt %s --split-input-file --verify-diagnostics
// Every verifier rule of the kiln ops, with the message it gives.

func.func @f0(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand element type 'i32' is not supported: expected float}}
  %r = kiln.exp %x : tensor<4xi32>
  return
}

// -----

func.func @f1(%x: tensor<4xui8>) {
  // expected-error @+1 {{operand element type 'ui8' is not supported: expected float or signed integer}}
  %r = kiln.neg %x : tensor<4xui8>
  return
}

// -----

func.func @f2(%x: tensor<4xf32>) {
  // expected-error @+1 {{expected signed integer or unsigned integer or i1}}
  %r = kiln.not %x : tensor<4xf32>
  return
}

// -----

func.func @f3(%x: tensor<4xi7>) {
  // expected-error @+1 {{operand #0 has element type 'i7', which kiln does not support}}
  %r = kiln.neg %x : tensor<4xi7>
  return
}

// -----

func.func @f4(%x: tensor<4xsi32>) {
  // expected-error @+1 {{which kiln does not support}}
  %r = kiln.neg %x : tensor<4xsi32>
  return
}

// -----

func.func @f5(%x: tensor<4xf32>) {
  // expected-error @+1 {{attribute 'approximate' must be "none" or "tanh"}}
  %r = kiln.gelu %x {approximate = "fast"} : tensor<4xf32>
  return
}

// -----

func.func @f6(%x: tensor<4xf32>) {
  // expected-error @+1 {{needs at least one of 'min' and 'max'}}
  %r = kiln.clamp %x : tensor<4xf32>
  return
}

// -----

func.func @f7(%x: tensor<4xf32>) {
  // expected-error @+1 {{attribute 'min' = 2.000000e+00 exceeds 'max' = 1.000000e+00}}
  %r = kiln.clamp %x {min = 2.0 : f64, max = 1.0 : f64} : tensor<4xf32>
  return
}

// -----

func.func @f8(%x: tensor<4xf32>) {
  // expected-error @+1 {{result element type must be i1}}
  %r = kiln.isnan %x : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @f9(%x: tensor<4xi32>) {
  // expected-error @+1 {{expected float}}
  %r = kiln.isnan %x : tensor<4xi32> -> tensor<4xi1>
  return
}

// -----

func.func @f10(%x: tensor<4xf32>) {
  // expected-error @+1 {{result has shape [5], expected [4]}}
  %r = kiln.isnan %x : tensor<4xf32> -> tensor<5xi1>
  return
}

// -----

func.func @f11(%x: tensor<4xf32>) {
  // expected-error @+1 {{result has shape [3], expected [4]}}
  %r = kiln.cast %x : tensor<4xf32> -> tensor<3xi8>
  return
}

// -----

func.func @f12(%x: tensor<4xf32>, %y: tensor<4xf16>) {
  // expected-error @+1 {{lhs element type 'f32' differs from rhs element type 'f16' (kiln does no implicit promotion)}}
  %r = kiln.add %x, %y : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

func.func @f13(%x: tensor<4x3xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{operands are not broadcast-compatible: lhs [4, 3] vs rhs [4] (dim 0 from the right)}}
  %r = kiln.mul %x, %y : (tensor<4x3xf32>, tensor<4xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @f14(%x: tensor<4x1xf32>, %y: tensor<3xf32>) {
  // expected-error @+1 {{result has shape [4, 1], expected [4, 3]}}
  %r = kiln.sub %x, %y : (tensor<4x1xf32>, tensor<3xf32>) -> tensor<4x1xf32>
  return
}

// -----

func.func @f15(%x: tensor<4xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{result element type 'f16' should be 'f32'}}
  %r = kiln.add %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf16>
  return
}

// -----

func.func @f16(%x: tensor<4xi32>, %y: tensor<4xi32>) {
  // expected-error @+1 {{expected float}}
  %r = kiln.pow %x, %y : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return
}

// -----

func.func @f17(%x: tensor<4xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{expected signed integer or unsigned integer or i1}}
  %r = kiln.and %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @f18(%x: tensor<4xi1>, %y: tensor<4xi1>) {
  // expected-error @+1 {{expected signed integer or unsigned integer}}
  %r = kiln.shl %x, %y : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  return
}

// -----

func.func @f19(%x: tensor<4xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{result element type 'f32' should be 'i1'}}
  %r = kiln.lt %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @f20(%c: tensor<4xi32>, %x: tensor<4xf32>) {
  // expected-error @+1 {{condition element type must be i1}}
  %r = kiln.select %c, %x, %x : (tensor<4xi32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @f21(%c: tensor<4xi1>, %x: tensor<4xf32>, %y: tensor<4xf64>) {
  // expected-error @+1 {{a element type 'f32' differs from b element type 'f64'}}
  %r = kiln.select %c, %x, %y : (tensor<4xi1>, tensor<4xf32>, tensor<4xf64>) -> tensor<4xf32>
  return
}

// -----

func.func @f22(%c: tensor<3xi1>, %x: tensor<4xf32>) {
  // expected-error @+1 {{operands are not broadcast-compatible}}
  %r = kiln.select %c, %x, %x : (tensor<3xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @f23() {
  // expected-error @+1 {{attribute 'dim' = 2 is out of range for rank 2}}
  %r = kiln.iota {dim = 2} : tensor<4x3xf32>
  return
}

// -----

func.func @f24() {
  // expected-error @+1 {{result element type 'i1' is not supported}}
  %r = kiln.iota {dim = 0} : tensor<4xi1>
  return
}

// -----

func.func @f25(%s: tensor<i32>) {
  // expected-error @+1 {{seed must be tensor<i64>}}
  %r = kiln.random_uniform %s : tensor<i32> -> tensor<4xf32>
  return
}

// -----

func.func @f26(%s: tensor<i64>) {
  // expected-error @+1 {{result element type 'i32' is not supported: expected float}}
  %r = kiln.random_uniform %s : tensor<i64> -> tensor<4xi32>
  return
}

// -----

func.func @f27(%s: tensor<i64>) {
  // expected-error @+1 {{attribute 'low' exceeds 'high'}}
  %r = kiln.random_uniform %s {low = 2.0 : f64, high = 1.0 : f64} : tensor<i64> -> tensor<4xf32>
  return
}

// -----

func.func @f28(%s: tensor<i64>) {
  // expected-error @+1 {{attribute 'std' must be non-negative}}
  %r = kiln.random_normal %s {std = -1.0 : f64} : tensor<i64> -> tensor<4xf32>
  return
}

// -----

func.func @f29(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{cannot reshape 12 elements [4, 3] into 10 elements [5, 2]}}
  %r = kiln.reshape %x : tensor<4x3xf32> -> tensor<5x2xf32>
  return
}

// -----

func.func @f30(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{operand element type 'f32' differs from result element type 'f16'}}
  %r = kiln.reshape %x : tensor<4x3xf32> -> tensor<12xf16>
  return
}

// -----

func.func @f31(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{cannot broadcast rank 2 to lower rank 1}}
  %r = kiln.broadcast %x : tensor<4x3xf32> -> tensor<3xf32>
  return
}

// -----

func.func @f32(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{cannot broadcast [4, 3] to [4, 6]: dim 1 is 3}}
  %r = kiln.broadcast %x : tensor<4x3xf32> -> tensor<4x6xf32>
  return
}

// -----

func.func @f33(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{attribute 'perm' has 1 entries for rank 2}}
  %r = kiln.transpose %x {perm = array<i64: 0>} : tensor<4x3xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @f34(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{attribute 'perm' repeats dim 0}}
  %r = kiln.transpose %x {perm = array<i64: 0, 0>} : tensor<4x3xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @f35(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{result has shape [4, 3], expected [3, 4]}}
  %r = kiln.transpose %x {perm = array<i64: 1, 0>} : tensor<4x3xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @f36(%x: tensor<4xf32>) {
  // expected-error @+1 {{step of dim 0 is 0, must be positive}}
  %r = kiln.slice %x {start = array<i64: 0>, stop = array<i64: 4>, step = array<i64: 0>} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @f37(%x: tensor<4xf32>) {
  // expected-error @+1 {{slice [2, 5) of dim 0 is outside [0, 4]}}
  %r = kiln.slice %x {start = array<i64: 2>, stop = array<i64: 5>} : tensor<4xf32> -> tensor<3xf32>
  return
}

// -----

func.func @f38(%x: tensor<4xf32>) {
  // expected-error @+1 {{need one entry per dim (rank 1)}}
  %r = kiln.slice %x {start = array<i64: 0, 0>, stop = array<i64: 4, 4>} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @f39(%x: tensor<4xf32>) {
  // expected-error @+1 {{result has shape [1], expected [2]}}
  %r = kiln.slice %x {start = array<i64: 0>, stop = array<i64: 4>, step = array<i64: 3>} : tensor<4xf32> -> tensor<1xf32>
  return
}

// -----

func.func @f40(%x: tensor<4xf32>) {
  // expected-error @+1 {{padding of dim 0 is negative}}
  %r = kiln.pad %x {low = array<i64: -1>, high = array<i64: 0>} : tensor<4xf32> -> tensor<3xf32>
  return
}

// -----

func.func @f41(%x: tensor<4xf32>) {
  // expected-error @+1 {{result has shape [5], expected [6]}}
  %r = kiln.pad %x {low = array<i64: 1>, high = array<i64: 1>} : tensor<4xf32> -> tensor<5xf32>
  return
}

// -----

func.func @f42(%x: tensor<4xf32>) {
  // expected-error @+1 {{attributes 'low' and 'high' need one entry per dim (rank 1)}}
  %r = kiln.pad %x {low = array<i64: 1, 1>, high = array<i64: 1>} : tensor<4xf32> -> tensor<6xf32>
  return
}

// -----

func.func @f43(%x: tensor<4xf32>) {
  // expected-error @+1 {{attribute 'dims' = 1 is out of range for rank 1}}
  %r = kiln.flip %x {dims = array<i64: 1>} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @f44(%x: tensor<4x3xf32>, %y: tensor<4x3xf16>) {
  // expected-error @+1 {{operand #0 element type 'f32' differs from operand #1 element type 'f16'}}
  %r = kiln.concat %x, %y {dim = 0} : (tensor<4x3xf32>, tensor<4x3xf16>) -> tensor<8x3xf32>
  return
}

// -----

func.func @f45(%x: tensor<4x3xf32>, %y: tensor<4x2xf32>) {
  // expected-error @+1 {{operand #1 has size 2 in dim 1, expected 3}}
  %r = kiln.concat %x, %y {dim = 0} : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<8x3xf32>
  return
}

// -----

func.func @f46(%x: tensor<4x3xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{operand #1 has rank 1, expected 2}}
  %r = kiln.concat %x, %y {dim = 0} : (tensor<4x3xf32>, tensor<4xf32>) -> tensor<8x3xf32>
  return
}

// -----

func.func @f47(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{result has shape [4, 5], expected [4, 6]}}
  %r = kiln.concat %x, %x {dim = 1} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x5xf32>
  return
}

// -----

func.func @f48(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{attribute 'dim' = 2 is out of range for rank 2}}
  %r = kiln.concat %x {dim = 2} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @f49(%x: tensor<4x3xf32>, %i: tensor<4x3xf32>) {
  // expected-error @+1 {{index element type must be i32 or i64}}
  %r = kiln.gather %x, %i {dim = 1} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @f50(%x: tensor<4x3xf32>, %i: tensor<4xi64>) {
  // expected-error @+1 {{index rank 1 differs from operand rank 2}}
  %r = kiln.gather %x, %i {dim = 1} : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<4xf32>
  return
}

// -----

func.func @f51(%x: tensor<4x3xf32>, %i: tensor<5x2xi64>) {
  // expected-error @+1 {{index size 5 exceeds operand size 4 in dim 0}}
  %r = kiln.gather %x, %i {dim = 1} : (tensor<4x3xf32>, tensor<5x2xi64>) -> tensor<5x2xf32>
  return
}

// -----

func.func @f52(%x: tensor<4x3xf32>, %i: tensor<2x2xi64>) {
  // expected-error @+1 {{index must be 1-D, got rank 2}}
  %r = kiln.index_select %x, %i {dim = 1} : (tensor<4x3xf32>, tensor<2x2xi64>) -> tensor<4x2xf32>
  return
}

// -----

func.func @f53(%x: tensor<4x3xf32>, %i: tensor<2xi64>) {
  // expected-error @+1 {{result has shape [4, 3], expected [4, 2]}}
  %r = kiln.index_select %x, %i {dim = 1} : (tensor<4x3xf32>, tensor<2xi64>) -> tensor<4x3xf32>
  return
}

// -----

func.func @f54(%x: tensor<4x3xf32>, %i: tensor<4x3xi64>, %s: tensor<4x2xf32>) {
  // expected-error @+1 {{index size 3 in dim 1 exceeds the source or operand size}}
  %r = kiln.scatter_add %x, %i, %s {dim = 1} : (tensor<4x3xf32>, tensor<4x3xi64>, tensor<4x2xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @f55(%x: tensor<4x3xi1>, %i: tensor<4x3xi64>) {
  // expected-error @+1 {{operand element type 'i1' is not supported}}
  %r = kiln.scatter_add %x, %i, %x {dim = 1} : (tensor<4x3xi1>, tensor<4x3xi64>, tensor<4x3xi1>) -> tensor<4x3xi1>
  return
}

// -----

func.func @f56(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{attribute 'dims' = 2 is out of range for rank 2}}
  %r = kiln.reduce_sum %x {dims = array<i64: 2>} : tensor<4x3xf32> -> tensor<4xf32>
  return
}

// -----

func.func @f57(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{attribute 'dims' repeats dim 1}}
  %r = kiln.reduce_sum %x {dims = array<i64: 1, 1>} : tensor<4x3xf32> -> tensor<4xf32>
  return
}

// -----

func.func @f58(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{result has shape [4], expected [4, 1]}}
  %r = kiln.reduce_max %x {dims = array<i64: 1>, keep_dims = true} : tensor<4x3xf32> -> tensor<4xf32>
  return
}

// -----

func.func @f59(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{result element type 'f64' should be 'f32'}}
  %r = kiln.reduce_sum %x {dims = array<i64: 1>} : tensor<4x3xf32> -> tensor<4xf64>
  return
}

// -----

func.func @f60(%x: tensor<4x3xi32>) {
  // expected-error @+1 {{expected float}}
  %r = kiln.reduce_mean %x {dims = array<i64: 1>} : tensor<4x3xi32> -> tensor<4xi32>
  return
}

// -----

func.func @f61(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{result element type 'f32' should be 'i1'}}
  %r = kiln.reduce_any %x {dims = array<i64: 1>} : tensor<4x3xf32> -> tensor<4xf32>
  return
}

// -----

func.func @f62(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{result element type must be i64}}
  %r = kiln.argmax %x {dim = 1} : tensor<4x3xf32> -> tensor<4xi32>
  return
}

// -----

func.func @f63(%x: tensor<4x0xf32>) {
  // expected-error @+1 {{cannot take the arg of an empty dim 1}}
  %r = kiln.argmin %x {dim = 1} : tensor<4x0xf32> -> tensor<4xi64>
  return
}

// -----

func.func @f64(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{result has shape [4], expected [4, 1]}}
  %r = kiln.argmax %x {dim = 1, keep_dims = true} : tensor<4x3xf32> -> tensor<4xi64>
  return
}

// -----

func.func @f65(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{attribute 'dim' = -1 is out of range for rank 2}}
  %r = kiln.softmax %x {dim = -1} : tensor<4x3xf32>
  return
}

// -----

func.func @f66(%x: tensor<4x3xi32>) {
  // expected-error @+1 {{expected float}}
  %r = kiln.log_softmax %x {dim = 1} : tensor<4x3xi32>
  return
}

// -----

func.func @f67(%x: tensor<4x3xi1>) {
  // expected-error @+1 {{operand element type 'i1' is not supported}}
  %r = kiln.cumsum %x {dim = 1} : tensor<4x3xi1>
  return
}

// -----

func.func @f68(%a: tensor<4xf32>, %b: tensor<4x2xf32>) {
  // expected-error @+1 {{operands need rank >= 2, got 1 and 2}}
  %r = kiln.matmul %a, %b : (tensor<4xf32>, tensor<4x2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @f68_f8_and_float(%a: tensor<4x3xf8E4M3FN>, %b: tensor<3x2xf32>) {
  // Two f8 formats may meet; an f8 and another type may not.
  // expected-error @+1 {{a element type 'f8E4M3FN' differs from b element type 'f32'}}
  %r = kiln.matmul %a, %b : (tensor<4x3xf8E4M3FN>, tensor<3x2xf32>) -> tensor<4x2xf32>
  return
}

// -----

func.func @f69(%a: tensor<4x3xf32>, %b: tensor<4x2xf32>) {
  // expected-error @+1 {{contraction sizes differ: a has 3 columns, b has 4 rows}}
  %r = kiln.matmul %a, %b : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  return
}

// -----

func.func @f70(%a: tensor<2x4x3xf32>, %b: tensor<3x3x2xf32>) {
  // expected-error @+1 {{batch dims [2] and [3] are not broadcast-compatible}}
  %r = kiln.matmul %a, %b : (tensor<2x4x3xf32>, tensor<3x3x2xf32>) -> tensor<2x4x2xf32>
  return
}

// -----

func.func @f71(%a: tensor<4x3xf32>, %b: tensor<3x2xf32>) {
  // expected-error @+1 {{result element type 'f16' must be the input type 'f32' or a wider type of the same kind}}
  %r = kiln.matmul %a, %b : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf16>
  return
}

// -----

func.func @f72(%a: tensor<4x3xf32>, %b: tensor<3x2xf32>) {
  // expected-error @+1 {{result has shape [4, 3], expected [4, 2]}}
  %r = kiln.matmul %a, %b : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @f73(%x: tensor<4x8xf32>, %w: tensor<4xf32>) {
  // expected-error @+1 {{parameter has shape [4], expected [8]}}
  %r = kiln.layer_norm %x, %w, %w : (tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @f74(%x: tensor<4x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{attribute 'eps' must be non-negative}}
  %r = kiln.rms_norm %x, %w {eps = -1.0 : f64} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @f75(%x: tensor<4x8xi32>, %w: tensor<8xi32>) {
  // expected-error @+1 {{expected float}}
  %r = kiln.rms_norm %x, %w : (tensor<4x8xi32>, tensor<8xi32>) -> tensor<4x8xi32>
  return
}

// -----

func.func @f8_arith(%x: tensor<4xf8E4M3FN>) {
  // expected-error @+1 {{operand element type 'f8E4M3FN' is not supported: expected float or signed integer}}
  %r = kiln.neg %x : tensor<4xf8E4M3FN>
  return
}

// -----

func.func @quantize_scale_rank(%x: tensor<4x32xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{a per-tensor scale must be rank 0, got shape [4] (set 'block_size' for per-block scales)}}
  %q = kiln.quantize %x, %s : (tensor<4x32xf32>, tensor<4xf32>) -> tensor<4x32xi8>
  return
}

// -----

func.func @quantize_block(%x: tensor<4x30xf32>, %s: tensor<4x2xf32>) {
  // expected-error @+1 {{'block_size' 16 does not divide the last dim (30)}}
  %q = kiln.quantize %x, %s {block_size = 16} : (tensor<4x30xf32>, tensor<4x2xf32>) -> tensor<4x30xi8>
  return
}

// -----

func.func @quantize_block_scale_shape(%x: tensor<4x32xf32>, %s: tensor<4x4xf32>) {
  // expected-error @+1 {{scale has shape [4, 4], expected [4, 2]}}
  %q = kiln.quantize %x, %s {block_size = 16} : (tensor<4x32xf32>, tensor<4x4xf32>) -> tensor<4x32xi8>
  return
}

// -----

func.func @quantize_scale_type(%x: tensor<8xf32>, %s: tensor<f64>) {
  // expected-error @+1 {{scale element type must be f32, f16 or bf16, got 'f64'}}
  %q = kiln.quantize %x, %s : (tensor<8xf32>, tensor<f64>) -> tensor<8xi8>
  return
}

// -----

func.func @quantize_result(%x: tensor<8xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{result element type must be i8, got 'i32'}}
  %q = kiln.quantize %x, %s : (tensor<8xf32>, tensor<f32>) -> tensor<8xi32>
  return
}

// -----

func.func @dequantize_input(%q: tensor<8xi32>, %s: tensor<f32>) {
  // expected-error @+1 {{dequantizes i8, got 'i32'}}
  %x = kiln.dequantize %q, %s : (tensor<8xi32>, tensor<f32>) -> tensor<8xf32>
  return
}

// -----

// An index into an empty dim has nothing to read (torch errors too).
func.func @gather_empty_dim(%x: tensor<4x0xf32>, %i: tensor<4x2xi64>) {
  // expected-error @+1 {{dim 1 of the operand is empty, so no index into it is valid (index shape [4, 2])}}
  %r = kiln.gather %x, %i {dim = 1} : (tensor<4x0xf32>, tensor<4x2xi64>) -> tensor<4x2xf32>
  return
}

// -----

func.func @index_select_empty_dim(%x: tensor<4x0xf32>, %i: tensor<3xi32>) {
  // expected-error @+1 {{dim 1 of the operand is empty}}
  %r = kiln.index_select %x, %i {dim = 1} : (tensor<4x0xf32>, tensor<3xi32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @scatter_add_empty_dim(%x: tensor<4x0xf32>, %i: tensor<4x2xi64>, %s: tensor<4x2xf32>) {
  // expected-error @+1 {{dim 1 of the operand is empty}}
  %r = kiln.scatter_add %x, %i, %s {dim = 1} : (tensor<4x0xf32>, tensor<4x2xi64>, tensor<4x2xf32>) -> tensor<4x0xf32>
  return
}

// -----

// Attributes an op does not define are errors, not silently ignored.
func.func @unknown_attribute(%x: tensor<4x5xf32>) {
  // expected-error @+1 {{'kiln.softmax' op has no attribute 'keep_dims' (its attributes: dim)}}
  %r = kiln.softmax %x {dim = 1, keep_dims = true} : tensor<4x5xf32>
  return
}

// -----

func.func @misspelt_attribute(%x: tensor<4x5xf32>) {
  // expected-error @+1 {{'kiln.reduce_sum' op has no attribute 'keepdims' (its attributes: dims, keep_dims)}}
  %r = kiln.reduce_sum %x {dims = array<i64: 1>, keepdims = true} : tensor<4x5xf32> -> tensor<4xf32>
  return
}

// -----

func.func @attribute_on_op_without_any(%x: tensor<4xf32>) {
  // expected-error @+1 {{'kiln.exp' op has no attribute 'fast' (it takes none)}}
  %r = kiln.exp %x {fast} : tensor<4xf32>
  return
}

// -----

func.func @unknown_attribute_generic(%x: tensor<4x5xf32>) {
  // expected-error @+1 {{'kiln.cumsum' op has no attribute 'reverse' (its attributes: dim)}}
  %r = "kiln.cumsum"(%x) {dim = 1 : i64, reverse = true} : (tensor<4x5xf32>) -> tensor<4x5xf32>
  return
}

// -----

// Kiln ops keep attributes in their dictionary, where every one is checked:
// a properties struct would drop unknown entries silently.
func.func @properties(%x: tensor<4x5xf32>) {
  // expected-error @+1 {{this operation does not support properties}}
  %r = "kiln.cumsum"(%x) <{dim = 1 : i64, reverse = true}> : (tensor<4x5xf32>) -> tensor<4x5xf32>
  return
}

// -----

// Sizes in bytes are computed from shapes everywhere: they must fit in int64.
func.func @byte_size_overflow(%x: tensor<2147483648x2147483648xf32>) {
  // expected-error @+1 {{operand #0 type 'tensor<2147483648x2147483648xf32>' is too large: 4611686018427387904 elements overflow int64 as a size in bytes}}
  %r = kiln.neg %x : tensor<2147483648x2147483648xf32>
  return
}

// -----

func.func @element_count_overflow(%x: tensor<4294967296x4294967296x2xf32>) {
  // expected-error @+1 {{operand #0 type 'tensor<4294967296x4294967296x2xf32>' is too large: its element count overflows int64}}
  %r = kiln.reshape %x : tensor<4294967296x4294967296x2xf32> -> tensor<2x4294967296x4294967296xf32>
  return
}

// -----

func.func @result_too_large() {
  // expected-error @+1 {{result #0 type 'tensor<4611686018427387904x4xi8>' is too large}}
  %r = kiln.fill {value = 1.0 : f64} : tensor<4611686018427387904x4xi8>
  return
}

// -----

// Shape arithmetic in verifiers is checked too.
func.func @pad_overflow(%x: tensor<4xf32>) {
  // expected-error @+1 {{padded size of dim 0 overflows int64}}
  %r = kiln.pad %x {low = array<i64: 9223372036854775807>, high = array<i64: 1>} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @concat_overflow(%x: tensor<4611686018427387904xi8>) {
  // expected-error @+1 {{concatenated size of dim 0 overflows int64}}
  %r = kiln.concat %x, %x {dim = 0} : (tensor<4611686018427387904xi8>, tensor<4611686018427387904xi8>) -> tensor<1xi8>
  return
}

// -----

// A `?` off the concatenated dim takes the static size; two static sizes
// that differ are named even where the first operand's is `?`.
func.func @concat_static_sizes_differ(%x: tensor<?x4xf32>, %y: tensor<8x4xf32>, %z: tensor<6x4xf32>) {
  // expected-error @+1 {{operand #2 has size 6 in dim 0, expected 8}}
  %r = kiln.concat %x, %y, %z {dim = 1} : (tensor<?x4xf32>, tensor<8x4xf32>, tensor<6x4xf32>) -> tensor<8x12xf32>
  return
}

// -----

// conv2d, the pools and attention.
func.func @conv_negative_stride(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) {
  // expected-error @+1 {{attribute 'stride' = [-1, 1] must be positive}}
  %r = kiln.conv2d %x, %w {stride = array<i64: -1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_zero_dilation(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) {
  // expected-error @+1 {{attribute 'dilation' = [1, 0] must be positive}}
  %r = kiln.conv2d %x, %w {dilation = array<i64: 1, 0>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_negative_padding(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) {
  // expected-error @+1 {{attribute 'padding' = [0, -2] must be non-negative}}
  %r = kiln.conv2d %x, %w {padding = array<i64: 0, -2>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_stride_rank(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) {
  // expected-error @+1 {{attribute 'stride' needs 2 entries (h, w), got 1}}
  %r = kiln.conv2d %x, %w {stride = array<i64: 2>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_groups_channels(%x: tensor<1x4x8x8xf32>, %w: tensor<6x1x3x3xf32>) {
  // expected-error @+1 {{groups = 3 does not divide the input channels 4}}
  %r = kiln.conv2d %x, %w {groups = 3 : i64} : (tensor<1x4x8x8xf32>, tensor<6x1x3x3xf32>) -> tensor<1x6x6x6xf32>
  return
}

// -----

func.func @conv_groups_out_channels(%x: tensor<1x4x8x8xf32>, %w: tensor<3x2x3x3xf32>) {
  // expected-error @+1 {{groups = 2 does not divide the output channels 3 (w dim 0)}}
  %r = kiln.conv2d %x, %w {groups = 2 : i64} : (tensor<1x4x8x8xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x6x6xf32>
  return
}

// -----

func.func @conv_zero_groups(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) {
  // expected-error @+1 {{attribute 'groups' = 0 must be positive}}
  %r = kiln.conv2d %x, %w {groups = 0 : i64} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_weight_channels(%x: tensor<1x4x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{w has 3 input channels per group (dim 1), expected 4 (x's 4 channels / groups 1)}}
  %r = kiln.conv2d %x, %w : (tensor<1x4x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_bias_shape(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{bias has shape [3], expected [4]}}
  %r = kiln.conv2d %x, %w, %b : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, tensor<3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_rank(%x: tensor<4x8x8xf32>, %w: tensor<4x4x3x3xf32>) {
  // expected-error @+1 {{x must be NCHW (rank 4), got rank 3}}
  %r = kiln.conv2d %x, %w : (tensor<4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_int(%x: tensor<1x4x8x8xi32>, %w: tensor<4x4x3x3xi32>) {
  // expected-error @+1 {{x element type 'i32' is not supported: expected float}}
  %r = kiln.conv2d %x, %w : (tensor<1x4x8x8xi32>, tensor<4x4x3x3xi32>) -> tensor<1x4x6x6xi32>
  return
}

// -----

func.func @conv_mixed_types(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf16>) {
  // expected-error @+1 {{x element type 'f32' differs from w element type 'f16'}}
  %r = kiln.conv2d %x, %w : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf16>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_output_empty(%x: tensor<1x4x2x8xf32>, %w: tensor<4x4x3x3xf32>) {
  // expected-error @+1 {{output size of spatial dim 0 is 0 (<= 0): input 2 with padding 0 is smaller than the window 3}}
  %r = kiln.conv2d %x, %w : (tensor<1x4x2x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x0x6xf32>
  return
}

// -----

func.func @conv_padding_overflow(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) {
  // expected-error @+1 {{output size of spatial dim 0 overflows int64}}
  %r = kiln.conv2d %x, %w {padding = array<i64: 4611686018427387904, 0>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_result_shape(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) {
  // expected-error @+1 {{result has shape [1, 4, 6, 6], expected [1, 4, 3, 3]}}
  %r = kiln.conv2d %x, %w {stride = array<i64: 2, 2>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @pool_zero_stride(%x: tensor<1x4x8x8xf32>) {
  // expected-error @+1 {{attribute 'stride' = [0, 1] must be positive}}
  %r = kiln.max_pool2d %x {kernel = array<i64: 2, 2>, stride = array<i64: 0, 1>} : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
  return
}

// -----

func.func @pool_zero_kernel(%x: tensor<1x4x8x8xf32>) {
  // expected-error @+1 {{attribute 'kernel' = [0, 2] must be positive}}
  %r = kiln.avg_pool2d %x {kernel = array<i64: 0, 2>} : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
  return
}

// -----

func.func @pool_padding_over_half(%x: tensor<1x4x8x8xf32>) {
  // expected-error @+1 {{padding 2 of spatial dim 1 exceeds half the kernel (3)}}
  %r = kiln.max_pool2d %x {kernel = array<i64: 3, 3>, padding = array<i64: 1, 2>} : tensor<1x4x8x8xf32> -> tensor<1x4x3x3xf32>
  return
}

// -----

func.func @pool_rank(%x: tensor<8x8xf32>) {
  // expected-error @+1 {{x must be NCHW or CHW (rank 4 or 3), got rank 2}}
  %r = kiln.max_pool2d %x {kernel = array<i64: 2, 2>} : tensor<8x8xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @pool_output_empty(%x: tensor<1x4x2x8xf32>) {
  // expected-error @+1 {{output size of spatial dim 0 is 0 (<= 0)}}
  %r = kiln.avg_pool2d %x {kernel = array<i64: 3, 3>} : tensor<1x4x2x8xf32> -> tensor<1x4x0x2xf32>
  return
}

// -----

func.func @pool_missing_kernel(%x: tensor<1x4x8x8xf32>) {
  // expected-error @+1 {{requires attribute 'kernel'}}
  %r = kiln.max_pool2d %x {} : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
  return
}

// -----

func.func @attention_head_dims(%q: tensor<2x5x8xf32>, %k: tensor<2x7x4xf32>, %v: tensor<2x7x4xf32>) {
  // expected-error @+1 {{mismatched head dims: q has 8, k has 4}}
  %r = kiln.attention %q, %k, %v : (tensor<2x5x8xf32>, tensor<2x7x4xf32>, tensor<2x7x4xf32>) -> tensor<2x5x4xf32>
  return
}

// -----

func.func @attention_kv_lengths(%q: tensor<2x5x8xf32>, %k: tensor<2x7x8xf32>, %v: tensor<2x6x8xf32>) {
  // expected-error @+1 {{k and v have different sequence lengths: 7 and 6}}
  %r = kiln.attention %q, %k, %v : (tensor<2x5x8xf32>, tensor<2x7x8xf32>, tensor<2x6x8xf32>) -> tensor<2x5x8xf32>
  return
}

// -----

func.func @attention_batch(%q: tensor<2x5x8xf32>, %k: tensor<3x7x8xf32>, %v: tensor<3x7x8xf32>) {
  // expected-error @+1 {{batch dims differ: q [2], k [3], v [3]}}
  %r = kiln.attention %q, %k, %v : (tensor<2x5x8xf32>, tensor<3x7x8xf32>, tensor<3x7x8xf32>) -> tensor<2x5x8xf32>
  return
}

// -----

func.func @attention_rank(%q: tensor<8xf32>, %k: tensor<8xf32>, %v: tensor<8xf32>) {
  // expected-error @+1 {{q needs rank >= 2 ([batch..., seq, head_dim]), got rank 1}}
  %r = kiln.attention %q, %k, %v : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @attention_mask_shape(%q: tensor<2x5x8xf32>, %k: tensor<2x7x8xf32>, %v: tensor<2x7x8xf32>, %m: tensor<5x6xf32>) {
  // expected-error @+1 {{mask [5, 6] does not broadcast to the scores [2, 5, 7]}}
  %r = kiln.attention %q, %k, %v, %m : (tensor<2x5x8xf32>, tensor<2x7x8xf32>, tensor<2x7x8xf32>, tensor<5x6xf32>) -> tensor<2x5x8xf32>
  return
}

// -----

func.func @attention_mask_type(%q: tensor<2x5x8xf32>, %k: tensor<2x7x8xf32>, %v: tensor<2x7x8xf32>, %m: tensor<5x7xi32>) {
  // expected-error @+1 {{mask element type 'i32' must be q's ('f32', added) or i1 (true keeps)}}
  %r = kiln.attention %q, %k, %v, %m : (tensor<2x5x8xf32>, tensor<2x7x8xf32>, tensor<2x7x8xf32>, tensor<5x7xi32>) -> tensor<2x5x8xf32>
  return
}

// -----

func.func @attention_int(%q: tensor<5x8xi8>, %k: tensor<7x8xi8>, %v: tensor<7x8xi8>) {
  // expected-error @+1 {{q element type 'i8' is not supported: expected float}}
  %r = kiln.attention %q, %k, %v : (tensor<5x8xi8>, tensor<7x8xi8>, tensor<7x8xi8>) -> tensor<5x8xi8>
  return
}

// -----

func.func @attention_scale_nan(%q: tensor<5x8xf32>, %k: tensor<7x8xf32>, %v: tensor<7x8xf32>) {
  // expected-error @+1 {{attribute 'scale' must be finite}}
  %r = kiln.attention %q, %k, %v {scale = 0x7FF8000000000000 : f64} : (tensor<5x8xf32>, tensor<7x8xf32>, tensor<7x8xf32>) -> tensor<5x8xf32>
  return
}

// -----

func.func @attention_result(%q: tensor<5x8xf32>, %k: tensor<7x8xf32>, %v: tensor<7x3xf32>) {
  // expected-error @+1 {{result has shape [5, 8], expected [5, 3]}}
  %r = kiln.attention %q, %k, %v : (tensor<5x8xf32>, tensor<7x8xf32>, tensor<7x3xf32>) -> tensor<5x8xf32>
  return
}

// -----

// The padded input is a buffer of its own: its size must fit in int64 too.
func.func @conv_padded_input_too_large(%x: tensor<1x1x8x8xf32>, %w: tensor<1x1x1x1xf32>) {
  // expected-error @+1 {{padded input type 'tensor<1x1x4611686018427387912x8xf32>' is too large}}
  %r = kiln.conv2d %x, %w {padding = array<i64: 2305843009213693952, 0>, stride = array<i64: 4611686018427387904, 1>} : (tensor<1x1x8x8xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x2x8xf32>
  return
}
