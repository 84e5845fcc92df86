//===- HostTensor.h - tensors in host memory --------------------*- C++ -*-===//
#ifndef KILN_RUNTIME_COMMON_HOSTTENSOR_H
#define KILN_RUNTIME_COMMON_HOSTTENSOR_H

#include "kiln/runtime/common/DType.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

/// Host buffers: 64-byte aligned (one vector register). From 4 MiB on they
/// come from a process-wide pool of huge pages (where the OS allows), kept
/// mapped after a free, so that a fresh output reuses faulted-in pages.
void *allocateHostBuffer(size_t bytes);
void freeHostBuffer(void *p) noexcept;

/// Leaves new elements uninitialised: outputs are written by kernels anyway,
/// and zeroing them first would cost a pass over memory.
template <typename T> struct UninitializedAllocator {
  using value_type = T;
  UninitializedAllocator() = default;
  template <typename U> UninitializedAllocator(const UninitializedAllocator<U> &) {}
  T *allocate(size_t n) { return static_cast<T *>(allocateHostBuffer(n * sizeof(T))); }
  void deallocate(T *p, size_t) noexcept { freeHostBuffer(p); }
  template <typename U> bool operator==(const UninitializedAllocator<U> &) const {
    return true;
  }
  template <typename U> void construct(U *p) noexcept { ::new (p) U; }
  template <typename U, typename... Args> void construct(U *p, Args &&...args) {
    ::new (p) U(std::forward<Args>(args)...);
  }
};

/// A dense, row-major tensor in host memory.
struct HostTensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<std::byte, UninitializedAllocator<std::byte>> data;

  HostTensor() = default;
  /// Throws std::length_error for a shape tensorBytes refuses (callers with
  /// a user's shape check it first, to report it as an error).
  HostTensor(DType dtype, std::vector<int64_t> shape);
  int64_t numElements() const;
  template <typename T> T *as() { return reinterpret_cast<T *>(data.data()); }
  template <typename T> const T *as() const {
    return reinterpret_cast<const T *>(data.data());
  }
  /// Element `i` converted to double (for printing and checking).
  double elementAsDouble(int64_t i) const;
};

/// IEEE half and bfloat16 conversions (round to nearest even).
float halfToFloat(uint16_t bits);
uint16_t floatToHalf(float value);
float bf16ToFloat(uint16_t bits);
uint16_t floatToBf16(float value);
/// f8 (`type` F8E4M3FN or F8E5M2) conversions as the kernels do them:
/// round to nearest even; too large becomes inf (E5M2) or NaN (E4M3FN).
float float8ToFloat(uint8_t bits, DType type);
uint8_t floatToFloat8(float value, DType type);

} // namespace kiln

#endif
