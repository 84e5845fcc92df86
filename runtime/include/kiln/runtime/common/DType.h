//===- DType.h - element types and tensor sizes -----------------*- C++ -*-===//
//
// Header-only: part of the compiler<->runtime contract (with Error.h and
// GpuPlan.h), so the compiler uses it without linking the runtime.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_COMMON_DTYPE_H
#define KILN_RUNTIME_COMMON_DTYPE_H

#include "kiln/runtime/common/Error.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

/// Element types a tensor can hold in memory. Bool is stored as one byte;
/// the f8 formats (OCP E4M3 without infinities, E5M2) are storage types:
/// kernels compute on them in f32.
enum class DType {
  F64, F32, F16, BF16, I8, I16, I32, I64, U8, U16, U32, U64, Bool, F8E4M3FN, F8E5M2
};

namespace detail {
struct DTypeInfo {
  DType type;
  std::string_view name;
  size_t size;
};
inline constexpr DTypeInfo kDTypes[] = {
    {DType::F64, "f64", 8},  {DType::F32, "f32", 4},  {DType::F16, "f16", 2},
    {DType::BF16, "bf16", 2}, {DType::I8, "i8", 1},   {DType::I16, "i16", 2},
    {DType::I32, "i32", 4},  {DType::I64, "i64", 8},  {DType::U8, "ui8", 1},
    {DType::U16, "ui16", 2}, {DType::U32, "ui32", 4}, {DType::U64, "ui64", 8},
    {DType::Bool, "i1", 1},  {DType::F8E4M3FN, "f8E4M3FN", 1},
    {DType::F8E5M2, "f8E5M2", 1},
};
} // namespace detail

inline size_t dtypeSize(DType type) {
  return detail::kDTypes[static_cast<int>(type)].size;
}
/// kiln's spelling of the type, as in MLIR ("f32", "ui8", "i1").
inline std::string_view dtypeName(DType type) {
  return detail::kDTypes[static_cast<int>(type)].name;
}
inline std::optional<DType> dtypeFromName(std::string_view name) {
  for (const detail::DTypeInfo &i : detail::kDTypes)
    if (i.name == name)
      return i.type;
  return std::nullopt;
}
inline bool isFloat8DType(DType t) { return t == DType::F8E4M3FN || t == DType::F8E5M2; }
inline bool isFloatDType(DType t) {
  return t == DType::F64 || t == DType::F32 || t == DType::F16 || t == DType::BF16 ||
         isFloat8DType(t);
}

inline std::string shapeToString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// "tensor<4x3xf32>" for diagnostics.
inline std::string describeTensorType(DType type, const std::vector<int64_t> &shape) {
  std::string s = "tensor<";
  for (int64_t d : shape)
    s += std::to_string(d) + "x";
  return s + std::string(dtypeName(type)) + ">";
}

/// The byte size of a tensor of `type` and `shape`. Every tensor size is
/// computed here: a negative dim, or a size that does not fit in 63 bits
/// (where a plain product would wrap, to 0 for [2^62, 4] f32), is an
/// invalid_argument error naming the tensor type.
inline Expected<size_t> tensorBytes(DType type, const std::vector<int64_t> &shape) {
  int64_t bytes = static_cast<int64_t>(dtypeSize(type));
  for (int64_t d : shape) {
    if (d < 0)
      return makeError(ErrorKind::InvalidArgument,
                       describeTensorType(type, shape) + " has a negative dimension");
    if (__builtin_mul_overflow(bytes, d, &bytes))
      return makeError(ErrorKind::InvalidArgument,
                       describeTensorType(type, shape) +
                           " is too large: its size in bytes overflows int64");
  }
  return static_cast<size_t>(bytes);
}

} // namespace kiln

#endif
