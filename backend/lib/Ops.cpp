//===- Ops.cpp - one typed call per op of the kiln dialect ----------------===//
#include "kiln/backend/Ops.h"

#include "kiln/backend/CompilerLibrary.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <mutex>

namespace kiln::ops {
namespace {
struct ResultType {
  DType dtype;
  Shape shape;
};

/// The result type of every signature seen, inferred and verified by the
/// dialect once.
struct Signatures {
  std::mutex mutex;
  OpKey::Map<ResultType> results; // never erased: entries stay where they are
  static Signatures &get() {
    static auto *signatures = new Signatures; // used until the process ends
    return *signatures;
  }
};

Error invalid(std::string_view op, std::string message) {
  return {ErrorKind::InvalidArgument, std::string(op) + ": " + std::move(message)};
}

Expected<ResultType> infer(std::string_view op, const std::vector<Tensor> &operands,
                           std::string_view attrs, std::optional<DType> element) {
  std::vector<TensorSpelling> spelled;
  for (const Tensor &t : operands)
    spelled.push_back({std::string(dtypeName(t.dtype())), t.shape()});
  std::optional<std::string_view> elementName;
  if (element)
    elementName = dtypeName(*element);
  auto library = compilerLibrary();
  if (!library)
    return std::unexpected(library.error());
  auto result = (*library)->checkTypedOp(op, spelled, attrs, elementName);
  if (!result)
    return std::unexpected(invalid(op, result.error()));
  std::optional<DType> dtype = dtypeFromName(result->element);
  if (!dtype)
    return makeError(ErrorKind::Unsupported, std::string(op) + ": a result of " +
                                                 result->element + " has no tensor dtype");
  return ResultType{*dtype, std::move(result->shape)};
}

std::string list(const Shape &values) {
  std::string text = "array<i64";
  for (size_t i = 0; i < values.size(); ++i)
    text += (i ? ", " : ": ") + std::to_string(values[i]);
  return text + ">";
}

/// An f64 attribute; non-finite values as their bit pattern (MLIR's float
/// literals have no spelling for them).
std::string f64(double value) {
  if (!std::isfinite(value)) {
    char hex[32];
    auto end = std::to_chars(hex, hex + sizeof hex, std::bit_cast<uint64_t>(value), 16).ptr;
    return "0x" + std::string(hex, end) + " : f64";
  }
  char digits[32];
  auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
  // Shortest round trip; MLIR wants a point in it: 1e-05 -> 1.0e-05.
  std::string text(digits, end);
  if (text.find('.') == std::string::npos)
    text.insert(std::min(text.find('e'), text.size()), ".0");
  return text + " : f64";
}

std::string i64(int64_t value) { return std::to_string(value) + " : i64"; }

std::string flag(bool value) { return value ? "true" : "false"; }

Expected<std::shared_ptr<Backend>> backendOf(const Tensor &x) {
  if (!x.valid())
    return makeError(ErrorKind::InvalidArgument, "operand #0 is an empty tensor (no buffer)");
  return Backend::shared(x.device());
}

Expected<Tensor> given(DeviceId device, std::string_view op, const std::vector<Tensor> &operands,
                       DType type, const Shape &shape, std::string_view attrs) {
  auto backend = Backend::shared(device);
  if (!backend)
    return std::unexpected(backend.error());
  return (*backend)->apply(op, operands, type, shape, attrs);
}

Expected<Tensor> givenLike(const Tensor &x, std::string_view op, const Shape &shape) {
  auto backend = backendOf(x);
  if (!backend)
    return std::unexpected(backend.error());
  return (*backend)->apply(op, {x}, x.dtype(), shape);
}
} // namespace

Expected<Tensor> call(std::string_view op, const std::vector<Tensor> &operands,
                      std::string_view attrs, std::optional<DType> element) {
  if (operands.empty())
    return std::unexpected(invalid(op, "needs at least one operand"));
  auto backend = backendOf(operands.front());
  if (!backend)
    return std::unexpected(backend.error());
  // The signature's key allocates nothing on a hit (OpKey.h).
  OpKey key;
  key.appendText(op);
  key.appendText(attrs);
  key.appendByte(element ? static_cast<char>(*element) : '-');
  for (const Tensor &t : operands)
    key.appendType(t.dtype(), t.shape());
  Signatures &signatures = Signatures::get();
  const ResultType *result;
  {
    std::lock_guard lock(signatures.mutex);
    auto it = signatures.results.find(key.view());
    if (it == signatures.results.end()) {
      auto inferred = infer(op, operands, attrs, element);
      if (!inferred)
        return std::unexpected(inferred.error());
      it = signatures.results.emplace(key.view(), std::move(*inferred)).first;
    }
    result = &it->second;
  }
  return (*backend)->apply(op, operands, result->dtype, result->shape, attrs);
}

size_t inferredSignatures() {
  Signatures &signatures = Signatures::get();
  std::lock_guard lock(signatures.mutex);
  return signatures.results.size();
}

std::span<const std::string_view> coveredOps() {
#define KILN_NAME(fn, op) "kiln." op,
  static constexpr std::string_view names[] = {
      KILN_UNARY_OPS(KILN_NAME) KILN_BINARY_OPS(KILN_NAME) KILN_REDUCE_OPS(KILN_NAME)
          KILN_ARG_OPS(KILN_NAME) KILN_ROW_OPS(KILN_NAME) KILN_OTHER_OPS(KILN_NAME)};
#undef KILN_NAME
  return names;
}

#define KILN_DEFINE(fn, op)                                                    \
  Expected<Tensor> fn(const Tensor &x) { return call("kiln." op, {x}); }
KILN_UNARY_OPS(KILN_DEFINE)
#undef KILN_DEFINE
#define KILN_DEFINE(fn, op)                                                    \
  Expected<Tensor> fn(const Tensor &lhs, const Tensor &rhs) {                  \
    return call("kiln." op, {lhs, rhs});                                       \
  }
KILN_BINARY_OPS(KILN_DEFINE)
#undef KILN_DEFINE
#define KILN_DEFINE(fn, op)                                                    \
  Expected<Tensor> fn(const Tensor &x, const Shape &dims, bool keepDims) {     \
    return call("kiln." op, {x}, "dims = " + list(dims) + ", keep_dims = " + flag(keepDims)); \
  }
KILN_REDUCE_OPS(KILN_DEFINE)
#undef KILN_DEFINE
#define KILN_DEFINE(fn, op)                                                    \
  Expected<Tensor> fn(const Tensor &x, int64_t dim, bool keepDims) {           \
    return call("kiln." op, {x}, "dim = " + i64(dim) + ", keep_dims = " + flag(keepDims)); \
  }
KILN_ARG_OPS(KILN_DEFINE)
#undef KILN_DEFINE
#define KILN_DEFINE(fn, op)                                                    \
  Expected<Tensor> fn(const Tensor &x, int64_t dim) {                          \
    return call("kiln." op, {x}, "dim = " + i64(dim));                         \
  }
KILN_ROW_OPS(KILN_DEFINE)
#undef KILN_DEFINE

Expected<Tensor> gelu(const Tensor &x, std::string_view approximate) {
  if (approximate.find_first_of("\"\\") != std::string_view::npos)
    return std::unexpected(invalid("kiln.gelu", "approximate must be \"none\" or \"tanh\""));
  return call("kiln.gelu", {x}, "approximate = \"" + std::string(approximate) + '"');
}

Expected<Tensor> clamp(const Tensor &x, std::optional<double> min, std::optional<double> max) {
  std::string attrs;
  if (min)
    attrs = "min = " + f64(*min);
  if (max)
    attrs += (attrs.empty() ? "max = " : ", max = ") + f64(*max);
  return call("kiln.clamp", {x}, attrs);
}

Expected<Tensor> cast(const Tensor &x, DType to) { return call("kiln.cast", {x}, {}, to); }

Expected<Tensor> select(const Tensor &cond, const Tensor &a, const Tensor &b) {
  return call("kiln.select", {cond, a, b});
}

Expected<Tensor> fill(DeviceId device, DType type, const Shape &shape, double value) {
  return given(device, "kiln.fill", {}, type, shape, "value = " + f64(value));
}

Expected<Tensor> iota(DeviceId device, DType type, const Shape &shape, int64_t dim) {
  return given(device, "kiln.iota", {}, type, shape, "dim = " + i64(dim));
}

Expected<Tensor> random_uniform(DeviceId device, DType type, const Shape &shape, double low,
                                double high) {
  return given(device, "kiln.random_uniform", {}, type, shape,
               "low = " + f64(low) + ", high = " + f64(high));
}

Expected<Tensor> random_normal(DeviceId device, DType type, const Shape &shape, double mean,
                               double std) {
  return given(device, "kiln.random_normal", {}, type, shape,
               "mean = " + f64(mean) + ", std = " + f64(std));
}

Expected<Tensor> reshape(const Tensor &x, const Shape &shape) {
  return givenLike(x, "kiln.reshape", shape);
}

Expected<Tensor> broadcast(const Tensor &x, const Shape &shape) {
  return givenLike(x, "kiln.broadcast", shape);
}

Expected<Tensor> transpose(const Tensor &x, const Shape &perm) {
  return call("kiln.transpose", {x}, "perm = " + list(perm));
}

Expected<Tensor> slice(const Tensor &x, const Shape &start, const Shape &stop, const Shape &step) {
  std::string attrs = "start = " + list(start) + ", stop = " + list(stop);
  if (!step.empty())
    attrs += ", step = " + list(step);
  return call("kiln.slice", {x}, attrs);
}

Expected<Tensor> concat(const std::vector<Tensor> &xs, int64_t dim) {
  return call("kiln.concat", xs, "dim = " + i64(dim));
}

Expected<Tensor> pad(const Tensor &x, const Shape &low, const Shape &high, double value) {
  return call("kiln.pad", {x},
              "low = " + list(low) + ", high = " + list(high) + ", value = " + f64(value));
}

Expected<Tensor> flip(const Tensor &x, const Shape &dims) {
  return call("kiln.flip", {x}, "dims = " + list(dims));
}

Expected<Tensor> gather(const Tensor &x, const Tensor &idx, int64_t dim) {
  return call("kiln.gather", {x, idx}, "dim = " + i64(dim));
}

Expected<Tensor> index_select(const Tensor &x, const Tensor &idx, int64_t dim) {
  return call("kiln.index_select", {x, idx}, "dim = " + i64(dim));
}

Expected<Tensor> scatter_add(const Tensor &x, const Tensor &idx, const Tensor &src, int64_t dim) {
  return call("kiln.scatter_add", {x, idx, src}, "dim = " + i64(dim));
}

Expected<Tensor> matmul(const Tensor &a, const Tensor &b, std::optional<DType> result) {
  return call("kiln.matmul", {a, b}, {}, result);
}

Expected<Tensor> layer_norm(const Tensor &x, const Tensor &weight, const Tensor &bias,
                            double eps) {
  return call("kiln.layer_norm", {x, weight, bias}, "eps = " + f64(eps));
}

Expected<Tensor> rms_norm(const Tensor &x, const Tensor &weight, double eps) {
  return call("kiln.rms_norm", {x, weight}, "eps = " + f64(eps));
}

Expected<Tensor> quantize(const Tensor &x, const Tensor &scale, int64_t blockSize) {
  return call("kiln.quantize", {x, scale}, blockSize ? "block_size = " + i64(blockSize) : "");
}

Expected<Tensor> dequantize(const Tensor &q, const Tensor &scale, int64_t blockSize,
                            DType result) {
  return call("kiln.dequantize", {q, scale}, blockSize ? "block_size = " + i64(blockSize) : "",
              result);
}

namespace {
std::string pair(Pair values) { return list({values[0], values[1]}); }

Expected<Tensor> pool(std::string_view op, const Tensor &x, Pair kernel,
                      std::optional<Pair> stride, Pair padding) {
  std::string attrs = "kernel = " + pair(kernel) + ", padding = " + pair(padding);
  if (stride)
    attrs += ", stride = " + pair(*stride);
  return call(op, {x}, attrs);
}
} // namespace

Expected<Tensor> conv2d(const Tensor &x, const Tensor &w, const std::optional<Tensor> &bias,
                        Pair stride, Pair padding, Pair dilation, int64_t groups) {
  std::vector<Tensor> operands = {x, w};
  if (bias)
    operands.push_back(*bias);
  return call("kiln.conv2d", operands,
              "stride = " + pair(stride) + ", padding = " + pair(padding) +
                  ", dilation = " + pair(dilation) + ", groups = " + i64(groups));
}

Expected<Tensor> max_pool2d(const Tensor &x, Pair kernel, std::optional<Pair> stride,
                            Pair padding) {
  return pool("kiln.max_pool2d", x, kernel, stride, padding);
}

Expected<Tensor> avg_pool2d(const Tensor &x, Pair kernel, std::optional<Pair> stride,
                            Pair padding) {
  return pool("kiln.avg_pool2d", x, kernel, stride, padding);
}

Expected<Tensor> attention(const Tensor &q, const Tensor &k, const Tensor &v,
                           const std::optional<Tensor> &mask, bool causal,
                           std::optional<double> scale) {
  std::vector<Tensor> operands = {q, k, v};
  if (mask)
    operands.push_back(*mask);
  std::string attrs = "causal = " + flag(causal);
  if (scale)
    attrs += ", scale = " + f64(*scale);
  return call("kiln.attention", operands, attrs);
}

} // namespace kiln::ops
