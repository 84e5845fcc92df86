//===- HostTensor.cpp - tensors in host memory ----------------------------===//
#include "kiln/runtime/common/HostTensor.h"
#include "kiln/runtime/common/Error.h"
#include "kiln/runtime/common/MemoryPool.h"

#include <bit>
#include <cstdlib>
#include <new>
#include <sys/mman.h>
#include <algorithm>
#include <cmath>
#include <limits>
#include <cstring>
#include <mutex>
#include <stdexcept>

namespace kiln {

namespace {
constexpr size_t kHugePage = size_t(2) << 20;
/// Buffers larger than this are pooled: their pages stay mapped and
/// faulted-in for the next buffer of a similar size, so a kernel's output
/// does not pay a page fault (and the kernel zeroing the page) on every run
/// (a 1000^2 f32 matmul's 4 MB output, below the 4 MiB this once was, cost
/// it half its time here). Pages are 2 MiB-aligned and the pool slices them
/// in powers of two from the request up (2 MiB at least, from here), so every
/// pooled buffer starts on a huge page: that is how freeHostBuffer tells them
/// apart.
constexpr size_t kPooledAbove = kHugePage / 2;
/// Free pooled bytes kept for reuse; past this, every free page goes back.
constexpr size_t kPoolKeepsFree = size_t(1) << 30;

void *allocateAligned(size_t bytes, size_t alignment) {
  size_t rounded = (std::max<size_t>(bytes, 1) + alignment - 1) / alignment * alignment;
  void *p = std::aligned_alloc(alignment, rounded);
  if (!p)
    throw std::bad_alloc();
  return p;
}

/// The process's pool of large host buffers, on 2 MiB-aligned huge pages
/// (as NumPy's). Never destroyed: tensors in static objects may free
/// their buffers after it would be.
struct LargeBufferPool {
  std::mutex mutex;
  MemoryPool pool{MemoryPool::PageSource{
      [](size_t bytes) -> Expected<uint64_t> {
        void *p = allocateAligned(bytes, kHugePage);
        madvise(p, bytes, MADV_HUGEPAGE); // a hint: failure only costs speed
        return reinterpret_cast<uint64_t>(p);
      },
      [](uint64_t address) { std::free(reinterpret_cast<void *>(address)); }}};
};
LargeBufferPool &largeBuffers() {
  static auto *pool = new LargeBufferPool;
  return *pool;
}
} // namespace

void *allocateHostBuffer(size_t bytes) {
  if (bytes <= kPooledAbove)
    return allocateAligned(bytes, 64);
  LargeBufferPool &large = largeBuffers();
  std::lock_guard lock(large.mutex);
  auto allocation = large.pool.allocate(bytes);
  if (!allocation)
    throw std::bad_alloc();
  return reinterpret_cast<void *>(allocation->address);
}

void freeHostBuffer(void *p) noexcept {
  // Pooled buffers are 2 MiB-aligned; most others are not worth the lock.
  if (reinterpret_cast<uintptr_t>(p) % kHugePage == 0) {
    LargeBufferPool &large = largeBuffers();
    std::lock_guard lock(large.mutex);
    if (large.pool.free({reinterpret_cast<uint64_t>(p), 0})) {
      MemoryUsage usage = large.pool.usage();
      if (usage.bytesReserved - usage.bytesInUse - usage.bytesPadding > kPoolKeepsFree)
        large.pool.cleanup();
      return;
    }
  }
  std::free(p);
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
  case DType::F8E4M3FN:
  case DType::F8E5M2: return float8ToFloat(as<uint8_t>()[i], dtype);
  }
  return 0;
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

namespace {
// An f8 format: mantissa bits, exponent bias, whether it has infinities
// (E5M2) or uses its top pattern for NaN (E4M3FN).
struct Float8Format {
  int mantissa, bias;
  bool hasInf;
};
Float8Format float8Format(DType type) {
  return type == DType::F8E5M2 ? Float8Format{2, 15, true} : Float8Format{3, 7, false};
}
} // namespace

// As the kernels convert (ScalarOps.cpp: decodeFloat8, encodeFloat8).
float float8ToFloat(uint8_t bits, DType type) {
  const Float8Format f = float8Format(type);
  const int expBits = 7 - f.mantissa;
  const unsigned exp = (bits >> f.mantissa) & ((1u << expBits) - 1),
                 man = bits & ((1u << f.mantissa) - 1);
  float magnitude;
  if (f.hasInf && exp == (1u << expBits) - 1)
    magnitude = man ? std::numeric_limits<float>::quiet_NaN()
                    : std::numeric_limits<float>::infinity();
  else if (!f.hasInf && (bits & 0x7f) == 0x7f)
    magnitude = std::numeric_limits<float>::quiet_NaN();
  else if (exp == 0)
    magnitude = std::ldexp(static_cast<float>(man), 1 - f.bias - f.mantissa);
  else
    magnitude = std::ldexp(1.0f + std::ldexp(static_cast<float>(man), -f.mantissa),
                           static_cast<int>(exp) - f.bias);
  return bits & 0x80 ? -magnitude : magnitude;
}

uint8_t floatToFloat8(float value, DType type) {
  const Float8Format f = float8Format(type);
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint32_t sign = (bits >> 24) & 0x80, absBits = bits & 0x7fffffffu;
  const float a = std::bit_cast<float>(absBits);
  uint32_t r;
  if (std::isnan(value))
    r = 0x7f;
  else if (a >= (f.hasInf ? 65536.0f : 480.0f)) // inf for E5M2, NaN for E4M3FN
    r = f.hasInf ? 0x7c : 0x7f;
  else if (a < std::ldexp(1.0f, 1 - f.bias)) // a count of the smallest subnormal
    r = static_cast<uint32_t>(std::nearbyint(std::ldexp(a, f.bias - 1 + f.mantissa)));
  else { // round the mantissa to nearest even (a carry moves into the exponent)
    const int drop = 23 - f.mantissa;
    const uint32_t rounded = absBits + (1u << (drop - 1)) - 1 + ((absBits >> drop) & 1);
    r = (rounded >> drop) - (static_cast<uint32_t>(127 - f.bias) << f.mantissa);
  }
  return static_cast<uint8_t>(r | sign);
}

} // namespace kiln
