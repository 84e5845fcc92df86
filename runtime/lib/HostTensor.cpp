//===- HostTensor.cpp - element types and host tensors -------------------===//
#include "kiln/runtime/HostTensor.h"
#include "kiln/runtime/Error.h"

#include <bit>
#include <cstdlib>
#include <new>
#include <sys/mman.h>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace kiln {

const char *errorKindName(ErrorKind kind) {
  switch (kind) {
  case ErrorKind::InvalidArgument: return "invalid_argument";
  case ErrorKind::Compile: return "compile";
  case ErrorKind::Launch: return "launch";
  case ErrorKind::OutOfMemory: return "out_of_memory";
  case ErrorKind::Unsupported: return "unsupported";
  case ErrorKind::DevicePoisoned: return "device_poisoned";
  }
  return "error";
}

namespace {
struct DTypeInfo {
  DType type;
  std::string_view name;
  size_t size;
};
constexpr DTypeInfo kDTypes[] = {
    {DType::F64, "f64", 8},  {DType::F32, "f32", 4},  {DType::F16, "f16", 2},
    {DType::BF16, "bf16", 2}, {DType::I8, "i8", 1},   {DType::I16, "i16", 2},
    {DType::I32, "i32", 4},  {DType::I64, "i64", 8},  {DType::U8, "ui8", 1},
    {DType::U16, "ui16", 2}, {DType::U32, "ui32", 4}, {DType::U64, "ui64", 8},
    {DType::Bool, "i1", 1},
};
const DTypeInfo &info(DType t) { return kDTypes[static_cast<int>(t)]; }
} // namespace

void *allocateHostBuffer(size_t bytes) {
  constexpr size_t kHugePage = size_t(2) << 20;
  bool huge = bytes >= 2 * kHugePage;
  size_t alignment = huge ? kHugePage : 64;
  size_t rounded = (std::max<size_t>(bytes, 1) + alignment - 1) / alignment * alignment;
  void *p = std::aligned_alloc(alignment, rounded);
  if (!p)
    throw std::bad_alloc();
  if (huge)
    madvise(p, rounded, MADV_HUGEPAGE); // a hint: failure only costs speed
  return p;
}

void freeHostBuffer(void *p) noexcept { std::free(p); }

size_t dtypeSize(DType type) { return info(type).size; }
std::string_view dtypeName(DType type) { return info(type).name; }
std::optional<DType> dtypeFromName(std::string_view name) {
  for (const DTypeInfo &i : kDTypes)
    if (i.name == name)
      return i.type;
  return std::nullopt;
}
bool isFloatDType(DType t) {
  return t == DType::F64 || t == DType::F32 || t == DType::F16 || t == DType::BF16;
}

Expected<size_t> tensorBytes(DType type, const std::vector<int64_t> &shape) {
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

HostTensor::HostTensor(DType dtype, std::vector<int64_t> shape)
    : dtype(dtype), shape(std::move(shape)) {
  auto bytes = tensorBytes(dtype, this->shape);
  if (!bytes)
    throw std::length_error(bytes.error().message);
  data.resize(*bytes);
}

int64_t HostTensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

double HostTensor::elementAsDouble(int64_t i) const {
  switch (dtype) {
  case DType::F64: return as<double>()[i];
  case DType::F32: return as<float>()[i];
  case DType::F16: return halfToFloat(as<uint16_t>()[i]);
  case DType::BF16: return bf16ToFloat(as<uint16_t>()[i]);
  case DType::I8: return as<int8_t>()[i];
  case DType::I16: return as<int16_t>()[i];
  case DType::I32: return as<int32_t>()[i];
  case DType::I64: return static_cast<double>(as<int64_t>()[i]);
  case DType::U8: return as<uint8_t>()[i];
  case DType::U16: return as<uint16_t>()[i];
  case DType::U32: return as<uint32_t>()[i];
  case DType::U64: return static_cast<double>(as<uint64_t>()[i]);
  case DType::Bool: return as<uint8_t>()[i] != 0;
  }
  return 0;
}

std::string shapeToString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string describeTensorType(DType type, const std::vector<int64_t> &shape) {
  std::string s = "tensor<";
  for (int64_t d : shape)
    s += std::to_string(d) + "x";
  return s + std::string(dtypeName(type)) + ">";
}

float halfToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);
  } else if (exp == 0) {
    if (man == 0)
      return std::bit_cast<float>(sign);
    float v = std::ldexp(static_cast<float>(man), -24);
    return sign ? -v : v;
  } else {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  }
  return std::bit_cast<float>(bits);
}

uint16_t floatToHalf(float value) {
  uint32_t f = std::bit_cast<uint32_t>(value);
  uint32_t sign = (f >> 16) & 0x8000u;
  uint32_t absBits = f & 0x7fffffffu;
  if (absBits >= 0x7f800000u) // inf or NaN
    return sign | 0x7c00u | (absBits > 0x7f800000u ? 0x200u : 0);
  if (absBits >= 0x477ff000u) // rounds to beyond 65504
    return sign | 0x7c00u;
  if (absBits < 0x38800000u) { // subnormal half: round in float arithmetic
    float scaled = std::bit_cast<float>(absBits) * 16777216.0f; // 2^24
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));
  }
  uint32_t rounded = absBits + 0xfffu + ((absBits >> 13) & 1u);
  return sign | static_cast<uint16_t>((rounded - 0x38000000u) >> 13);
}

float bf16ToFloat(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

uint16_t floatToBf16(float value) {
  uint32_t f = std::bit_cast<uint32_t>(value);
  if ((f & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((f >> 16) | 0x40u);
  return static_cast<uint16_t>((f + 0x7fffu + ((f >> 16) & 1u)) >> 16);
}

} // namespace kiln
