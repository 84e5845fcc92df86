//===- Capabilities.cpp - what a device can do with each element type ----===//
#include "kiln/backend/Capabilities.h"
#include "kiln/runtime/vulkan/VulkanDevice.h"

#include <optional>

namespace kiln {

namespace {
using enum ElementType;
constexpr TypeUsageSet kStorage = TypeUsage::Buffer | TypeUsage::Conversion;
constexpr TypeUsageSet kAll = kStorage | TypeUsage::Arithmetic | TypeUsage::DotProduct;
constexpr ElementType kComputeTypes[] = {F64, F32, F16, BF16, I8,  I16, I32,
                                         I64, U8,  U16, U32,  U64, Bool};

/// The type a tensor's elements are stored as.
ElementType storageOf(const DataType &type) {
  return type.quantizedScale ? I8 : type.element;
}

bool scaleUsable(const DeviceCapabilities &device, const DataType &type) {
  return !type.quantizedScale ||
         device.usageOf(*type.quantizedScale).contains(kStorage);
}
} // namespace

std::string_view elementTypeName(ElementType type) {
  static constexpr std::string_view names[] = {
      "f64", "f32", "tf32", "f16", "bf16", "f8E4M3FN", "f8E5M2", "i8",
      "i16", "i32", "i64",  "ui8", "ui16", "ui32",     "ui64",   "i1"};
  return names[static_cast<int>(type)];
}

TypeUsageSet DeviceCapabilities::usageOf(ElementType type) const {
  auto it = usage.find(type);
  return it == usage.end() ? TypeUsageSet() : it->second;
}

DeviceCapabilities DeviceCapabilities::cpu() {
  DeviceCapabilities c;
  for (ElementType t : kComputeTypes)
    c.usage[t] = kAll;
  c.usage[F8E4M3] = c.usage[F8E5M2] = kStorage;
  return c;
}

DeviceCapabilities DeviceCapabilities::cuda(int major, int minor) {
  DeviceCapabilities c = cpu();
  int sm = major * 10 + minor;
  if (sm >= 70)
    c.mma.push_back({F16, F16, F32, 8, 8, 4});
  if (sm >= 80) {
    c.usage[TF32] = TypeUsage::Conversion | TypeUsage::DotProduct;
    c.mma.push_back({F16, F16, F32, 16, 8, 16});
    c.mma.push_back({F16, F16, F16, 16, 8, 16});
    c.mma.push_back({BF16, BF16, F32, 16, 8, 16});
    c.mma.push_back({TF32, TF32, F32, 16, 8, 8});
    c.mma.push_back({I8, I8, I32, 16, 8, 32});
    c.mma.push_back({U8, U8, I32, 16, 8, 32});
  }
  if (sm >= 89) {
    c.usage[F8E4M3] = c.usage[F8E5M2] = kStorage | TypeUsage::DotProduct;
    c.mma.push_back({F8E4M3, F8E4M3, F32, 16, 8, 32});
    c.mma.push_back({F8E5M2, F8E5M2, F32, 16, 8, 32});
  }
  return c;
}

static std::optional<ElementType> elementTypeOf(VulkanComponentType t) {
  using enum VulkanComponentType;
  switch (t) {
  case F16: return ElementType::F16;
  case F32: return ElementType::F32;
  case F64: return ElementType::F64;
  case I8: return ElementType::I8;
  case I16: return ElementType::I16;
  case I32: return ElementType::I32;
  case I64: return ElementType::I64;
  case U8: return ElementType::U8;
  case U16: return ElementType::U16;
  case U32: return ElementType::U32;
  case U64: return ElementType::U64;
  }
  return std::nullopt;
}

DeviceCapabilities DeviceCapabilities::vulkan(const VulkanDeviceProperties &d) {
  DeviceCapabilities c;
  // Storage needs the buffer access of the width; arithmetic the shader
  // type. f8 values are bytes in buffers; bf16 is 16-bit bits in buffers
  // with arithmetic in f32 (kiln-spirv-bf16-as-i16), on 16-bit integers.
  auto set = [&](ElementType t, bool buffer, bool arithmetic) {
    TypeUsageSet u;
    if (buffer)
      u = kStorage;
    if (buffer && arithmetic)
      u = kAll;
    c.usage[t] = u;
  };
  set(F32, true, true);
  set(I32, true, true);
  set(U32, true, true);
  set(F64, d.float64, d.float64);
  set(F16, d.storage16, d.float16);
  set(BF16, d.storage16, d.int16);
  set(I16, d.storage16, d.int16);
  set(U16, d.storage16, d.int16);
  set(I8, d.storage8, d.int8);
  set(U8, d.storage8, d.int8);
  set(Bool, d.storage8, d.int8);
  set(I64, d.int64, d.int64);
  set(U64, d.int64, d.int64);
  set(F8E4M3, d.storage8, false);
  set(F8E5M2, d.storage8, false);
  for (const VulkanCooperativeMatrix &m : d.cooperativeMatrices) {
    auto a = elementTypeOf(m.a), b = elementTypeOf(m.b), cd = elementTypeOf(m.result);
    // kiln's MmaConfig has one type for C and D.
    if (m.c == m.result && a && b && cd)
      c.mma.push_back({*a, *b, *cd, int(m.m), int(m.n), int(m.k)});
  }
  return c;
}

bool supportsDtype(const DeviceCapabilities &device, const DataType &type) {
  if (type.nativeBool || !scaleUsable(device, type))
    return false;
  return device.usageOf(storageOf(type)).contains(kAll);
}

DTypeUsageSet dtypeUsage(const DeviceCapabilities &device, const DataType &type) {
  if (type.nativeBool || !scaleUsable(device, type))
    return {};
  ElementType storage = storageOf(type);
  TypeUsageSet usage = device.usageOf(storage);
  DTypeUsageSet out;
  if (usage.contains(kStorage))
    out = out | DTypeUsage::Storage;
  if (usage.contains(TypeUsage::Arithmetic))
    out = out | DTypeUsage::Arithmetic;
  for (const MmaConfig &m : device.mma)
    if (m.a == storage || m.b == storage || m.cd == storage)
      return out | DTypeUsage::Accelerated;
  return out;
}

} // namespace kiln
