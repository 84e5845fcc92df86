//===- Capabilities.h - what a device can do with each element type --*- C++ -*-===//
//
// The capability contract: per device and element type a usage set
// {Buffer, Conversion, Arithmetic, DotProduct}, the matrix-multiply-
// accumulate shapes the device accelerates, and from those the backend's
// answers `supportsDtype` and `dtypeUsage` {Storage, Arithmetic,
// Accelerated}.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_BACKEND_CAPABILITIES_H
#define KILN_BACKEND_CAPABILITIES_H

#include <type_traits>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

namespace kiln {

struct VulkanDeviceProperties;

enum class ElementType {
  F64, F32, TF32, F16, BF16, F8E4M3, F8E5M2,
  I8, I16, I32, I64, U8, U16, U32, U64, Bool
};
std::string_view elementTypeName(ElementType type);

/// A set of flags of enum `Flag` (an enum class of distinct bits).
template <typename Flag> class FlagSet {
public:
  constexpr FlagSet() = default;
  constexpr FlagSet(Flag f) : bits(static_cast<unsigned>(f)) {}
  constexpr FlagSet operator|(FlagSet o) const { return FlagSet(bits | o.bits); }
  constexpr bool contains(FlagSet o) const { return (bits & o.bits) == o.bits; }
  constexpr bool empty() const { return bits == 0; }
  constexpr bool operator==(const FlagSet &) const = default;

private:
  constexpr explicit FlagSet(unsigned bits) : bits(bits) {}
  unsigned bits = 0;
};
/// Only for the flag enums below: an unconstrained template would take
/// every `a | b` of the including file (MLIR's enums, for one).
template <typename Flag> struct IsUsageFlag : std::false_type {};
template <typename Flag>
  requires IsUsageFlag<Flag>::value
constexpr FlagSet<Flag> operator|(Flag a, Flag b) { return FlagSet<Flag>(a) | b; }

enum class TypeUsage : unsigned { Buffer = 1, Conversion = 2, Arithmetic = 4, DotProduct = 8 };
using TypeUsageSet = FlagSet<TypeUsage>;
template <> struct IsUsageFlag<TypeUsage> : std::true_type {};
enum class DTypeUsage : unsigned { Storage = 1, Arithmetic = 2, Accelerated = 4 };
using DTypeUsageSet = FlagSet<DTypeUsage>;
template <> struct IsUsageFlag<DTypeUsage> : std::true_type {};

/// D (m x n, cd) = A (m x k, a) * B (k x n, b) + C, in one instruction.
struct MmaConfig {
  ElementType a, b, cd;
  int m, n, k;
};

struct DeviceCapabilities {
  std::map<ElementType, TypeUsageSet> usage;
  std::vector<MmaConfig> mma;

  TypeUsageSet usageOf(ElementType type) const;
  /// The host CPU: every kiln type; f8 is storage only (kiln's rule).
  static DeviceCapabilities cpu();
  /// A CUDA device of compute capability major.minor: mma.sync shapes
  /// (f16 from sm_70, bf16/tf32/i8 from sm_80, f8 from sm_89).
  static DeviceCapabilities cuda(int major, int minor);
  /// A Vulkan device, from the features it reported; its MMA shapes are
  /// the subgroup cooperative matrices the driver reports
  /// (VK_KHR_cooperative_matrix).
  static DeviceCapabilities vulkan(const VulkanDeviceProperties &device);
};

/// An element type as the backend API sees a tensor's: a bool may be
/// stored natively (1 bit), a quantized tensor holds i8 values and a scale.
struct DataType {
  ElementType element;
  bool nativeBool = false;
  std::optional<ElementType> quantizedScale; // set: symmetric int8 quantized
};

/// Whether tensors of `type` work fully on the device (buffer, conversion,
/// arithmetic and dot products). Native bools never; quantized types only
/// when their scale type can be stored.
bool supportsDtype(const DeviceCapabilities &device, const DataType &type);
/// Storage (buffer + conversion), Arithmetic, Accelerated (in an MMA shape).
DTypeUsageSet dtypeUsage(const DeviceCapabilities &device, const DataType &type);

} // namespace kiln

#endif
