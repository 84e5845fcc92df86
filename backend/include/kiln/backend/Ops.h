//===- Ops.h - one typed call per op of the kiln dialect ---------*- C++ -*-===//
//
// `ops::add(a, b)`, `ops::softmax(x, 1)`, `ops::reduce_sum(x, {1}, false)`:
// the result type comes from the dialect's own rule (InferResultType.h) and
// the op is checked by the dialect's verifier, whose message a malformed
// call returns as invalid_argument. Both happen once per signature (op,
// attributes, operand types): a repeated call builds no IR.
//
// Ops run on the process's backend of their first operand's device
// (Backend::shared); generators (fill, iota, random_*) name the device.
// C++ names follow the dialect's mnemonics, except the bitwise ops, whose
// mnemonics are C++ keywords: bitwise_not/and/or/xor for not/and/or/xor.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_BACKEND_OPS_H
#define KILN_BACKEND_OPS_H

#include "kiln/backend/Backend.h"

#include <array>
#include <optional>
#include <span>

namespace kiln::ops {

// The typed ops by kind: X(C++ name, dialect mnemonic).
#define KILN_UNARY_OPS(X)                                                      \
  X(neg, "neg") X(abs, "abs") X(exp, "exp") X(log, "log") X(log1p, "log1p")    \
  X(sqrt, "sqrt") X(rsqrt, "rsqrt") X(recip, "recip") X(sin, "sin")            \
  X(cos, "cos") X(tanh, "tanh") X(sigmoid, "sigmoid") X(erf, "erf")            \
  X(relu, "relu") X(silu, "silu") X(floor, "floor") X(ceil, "ceil")            \
  X(round, "round") X(sign, "sign") X(isnan, "isnan") X(bitwise_not, "not")
#define KILN_BINARY_OPS(X)                                                     \
  X(add, "add") X(sub, "sub") X(mul, "mul") X(div, "div") X(rem, "rem")        \
  X(pow, "pow") X(max, "max") X(min, "min") X(bitwise_and, "and")              \
  X(bitwise_or, "or") X(bitwise_xor, "xor") X(shl, "shl") X(shr, "shr")        \
  X(eq, "eq") X(ne, "ne") X(lt, "lt") X(le, "le") X(gt, "gt") X(ge, "ge")
#define KILN_REDUCE_OPS(X)                                                     \
  X(reduce_sum, "reduce_sum") X(reduce_prod, "reduce_prod")                    \
  X(reduce_mean, "reduce_mean") X(reduce_max, "reduce_max")                    \
  X(reduce_min, "reduce_min") X(reduce_any, "reduce_any")                      \
  X(reduce_all, "reduce_all")
#define KILN_ARG_OPS(X) X(argmax, "argmax") X(argmin, "argmin")
#define KILN_ROW_OPS(X)                                                        \
  X(cumsum, "cumsum") X(softmax, "softmax") X(log_softmax, "log_softmax")
// The ops with their own signatures below.
#define KILN_OTHER_OPS(X)                                                      \
  X(gelu, "gelu") X(clamp, "clamp") X(cast, "cast") X(select, "select")        \
  X(fill, "fill") X(iota, "iota") X(random_uniform, "random_uniform")          \
  X(random_normal, "random_normal") X(reshape, "reshape")                      \
  X(broadcast, "broadcast") X(transpose, "transpose") X(slice, "slice")        \
  X(concat, "concat") X(pad, "pad") X(flip, "flip") X(gather, "gather")        \
  X(index_select, "index_select") X(scatter_add, "scatter_add")                \
  X(matmul, "matmul") X(layer_norm, "layer_norm") X(rms_norm, "rms_norm")      \
  X(quantize, "quantize") X(dequantize, "dequantize") X(conv2d, "conv2d")      \
  X(max_pool2d, "max_pool2d") X(avg_pool2d, "avg_pool2d")                      \
  X(attention, "attention")

using Shape = std::vector<int64_t>;

#define KILN_DECLARE(fn, op) Expected<Tensor> fn(const Tensor &x);
KILN_UNARY_OPS(KILN_DECLARE)
#undef KILN_DECLARE
#define KILN_DECLARE(fn, op) Expected<Tensor> fn(const Tensor &lhs, const Tensor &rhs);
KILN_BINARY_OPS(KILN_DECLARE)
#undef KILN_DECLARE
#define KILN_DECLARE(fn, op)                                                   \
  Expected<Tensor> fn(const Tensor &x, const Shape &dims, bool keepDims = false);
KILN_REDUCE_OPS(KILN_DECLARE)
#undef KILN_DECLARE
#define KILN_DECLARE(fn, op)                                                   \
  Expected<Tensor> fn(const Tensor &x, int64_t dim, bool keepDims = false);
KILN_ARG_OPS(KILN_DECLARE)
#undef KILN_DECLARE
#define KILN_DECLARE(fn, op) Expected<Tensor> fn(const Tensor &x, int64_t dim);
KILN_ROW_OPS(KILN_DECLARE)
#undef KILN_DECLARE

/// `approximate`: "none" or "tanh".
Expected<Tensor> gelu(const Tensor &x, std::string_view approximate = "none");
Expected<Tensor> clamp(const Tensor &x, std::optional<double> min, std::optional<double> max);
Expected<Tensor> cast(const Tensor &x, DType to);
Expected<Tensor> select(const Tensor &cond, const Tensor &a, const Tensor &b);
Expected<Tensor> fill(DeviceId device, DType type, const Shape &shape, double value);
Expected<Tensor> iota(DeviceId device, DType type, const Shape &shape, int64_t dim);
/// Drawn from the device's backend's seed (Backend::seed).
Expected<Tensor> random_uniform(DeviceId device, DType type, const Shape &shape,
                                double low = 0.0, double high = 1.0);
Expected<Tensor> random_normal(DeviceId device, DType type, const Shape &shape,
                               double mean = 0.0, double std = 1.0);
Expected<Tensor> reshape(const Tensor &x, const Shape &shape);
Expected<Tensor> broadcast(const Tensor &x, const Shape &shape);
Expected<Tensor> transpose(const Tensor &x, const Shape &perm);
/// `step` empty: 1 in every dim.
Expected<Tensor> slice(const Tensor &x, const Shape &start, const Shape &stop,
                       const Shape &step = {});
Expected<Tensor> concat(const std::vector<Tensor> &xs, int64_t dim);
Expected<Tensor> pad(const Tensor &x, const Shape &low, const Shape &high, double value = 0.0);
Expected<Tensor> flip(const Tensor &x, const Shape &dims);
Expected<Tensor> gather(const Tensor &x, const Tensor &idx, int64_t dim);
Expected<Tensor> index_select(const Tensor &x, const Tensor &idx, int64_t dim);
Expected<Tensor> scatter_add(const Tensor &x, const Tensor &idx, const Tensor &src, int64_t dim);
/// `result`: a wider element type than the inputs' (i8 x i8 -> i32).
Expected<Tensor> matmul(const Tensor &a, const Tensor &b, std::optional<DType> result = {});
Expected<Tensor> layer_norm(const Tensor &x, const Tensor &weight, const Tensor &bias,
                            double eps = 1e-5);
Expected<Tensor> rms_norm(const Tensor &x, const Tensor &weight, double eps = 1e-6);
/// `blockSize` 0: one scale for the tensor (rank-0 `scale`).
Expected<Tensor> quantize(const Tensor &x, const Tensor &scale, int64_t blockSize = 0);
Expected<Tensor> dequantize(const Tensor &q, const Tensor &scale, int64_t blockSize = 0,
                            DType result = DType::F32);
/// Spatial sizes (h, w) of conv2d and the pools.
using Pair = std::array<int64_t, 2>;
/// torch.nn.functional.conv2d: x NCHW, w OIHW (I = C / groups), bias [O].
Expected<Tensor> conv2d(const Tensor &x, const Tensor &w, const std::optional<Tensor> &bias = {},
                        Pair stride = {1, 1}, Pair padding = {0, 0}, Pair dilation = {1, 1},
                        int64_t groups = 1);
/// Over x's last two dims (NCHW or CHW); `stride` empty: the kernel.
/// max pads with -inf; avg counts padding as 0 (count_include_pad).
Expected<Tensor> max_pool2d(const Tensor &x, Pair kernel, std::optional<Pair> stride = {},
                            Pair padding = {0, 0});
Expected<Tensor> avg_pool2d(const Tensor &x, Pair kernel, std::optional<Pair> stride = {},
                            Pair padding = {0, 0});
/// softmax(q k^T * scale + mask) v over [batch..., seq, head_dim], as
/// scaled_dot_product_attention; `scale` empty: 1/sqrt(head_dim); a bool
/// `mask` keeps where true, a float one is added.
Expected<Tensor> attention(const Tensor &q, const Tensor &k, const Tensor &v,
                           const std::optional<Tensor> &mask = {}, bool causal = false,
                           std::optional<double> scale = {});

/// The generic call behind the typed ops: `op` ("kiln.add") on `operands`
/// with `attrs` (the attribute dictionary's body, "dim = 1 : i64"); the
/// result type inferred, its element type replaced by `element` if given.
Expected<Tensor> call(std::string_view op, const std::vector<Tensor> &operands,
                      std::string_view attrs = {}, std::optional<DType> element = {});

/// The dialect ops ("kiln.add", ...) that have a typed call here.
std::span<const std::string_view> coveredOps();
/// Signatures inferred so far (cache misses); a repeated call adds none.
size_t inferredSignatures();

} // namespace kiln::ops

#endif
