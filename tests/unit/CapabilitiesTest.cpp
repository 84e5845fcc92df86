//===- CapabilitiesTest.cpp - dtype capability answers per device --------===//
#include "kiln/backend/Engine.h"
#include "kiln/runtime/vulkan/VulkanDevice.h"

#include <gtest/gtest.h>

using namespace kiln;

namespace {
using enum ElementType;

// The usage flags' operator| is for them alone: it must not take the `|`
// of other scoped enums (MLIR's, in a file that includes both).
enum class OtherFlags : unsigned { A = 1, B = 2 };
template <typename Flag> constexpr bool hasOr = requires(Flag a) { a | a; };
static_assert(!hasOr<OtherFlags>);
static_assert(hasOr<TypeUsage>);
static_assert((TypeUsage::Buffer | TypeUsage::Arithmetic).contains(TypeUsage::Buffer));
const DTypeUsageSet kStorageArithmetic = DTypeUsage::Storage | DTypeUsage::Arithmetic;

TEST(DtypeCapability, CpuRunsEveryKilnTypeAndStoresF8) {
  DeviceCapabilities cpu = DeviceCapabilities::cpu();
  for (ElementType t : {F64, F32, F16, BF16, I8, I16, I32, I64, U8, U16, U32, U64, Bool}) {
    EXPECT_TRUE(supportsDtype(cpu, {t})) << elementTypeName(t);
    EXPECT_EQ(dtypeUsage(cpu, {t}), kStorageArithmetic) << elementTypeName(t);
  }
  EXPECT_FALSE(supportsDtype(cpu, {F8E4M3}));
  EXPECT_EQ(dtypeUsage(cpu, {F8E5M2}), DTypeUsageSet(DTypeUsage::Storage));
  EXPECT_TRUE(cpu.mma.empty());
}

TEST(DtypeCapability, NativeBoolIsNeverSupported) {
  for (const DeviceCapabilities &d : {DeviceCapabilities::cpu(), DeviceCapabilities::cuda(9, 0)}) {
    EXPECT_FALSE(supportsDtype(d, {Bool, /*nativeBool=*/true}));
    EXPECT_TRUE(dtypeUsage(d, {Bool, /*nativeBool=*/true}).empty());
    EXPECT_TRUE(supportsDtype(d, {Bool}));
  }
}

TEST(DtypeCapability, Sm90AcceleratesF16Bf16Tf32F8AndI8) {
  DeviceCapabilities h200 = DeviceCapabilities::cuda(9, 0);
  auto has = [&](ElementType a, int m, int n, int k) {
    for (const MmaConfig &c : h200.mma)
      if (c.a == a && c.m == m && c.n == n && c.k == k)
        return true;
    return false;
  };
  EXPECT_TRUE(has(F16, 16, 8, 16));
  EXPECT_TRUE(has(BF16, 16, 8, 16));
  EXPECT_TRUE(has(TF32, 16, 8, 8));
  EXPECT_TRUE(has(F8E4M3, 16, 8, 32));
  EXPECT_TRUE(has(I8, 16, 8, 32));
  EXPECT_EQ(dtypeUsage(h200, {BF16}), kStorageArithmetic | DTypeUsage::Accelerated);
  EXPECT_EQ(dtypeUsage(h200, {F32}), kStorageArithmetic | DTypeUsage::Accelerated)
      << "f32 is an accumulator type of the MMA shapes";
  EXPECT_EQ(dtypeUsage(h200, {F64}), kStorageArithmetic);
  EXPECT_EQ(dtypeUsage(h200, {F8E4M3}), DTypeUsage::Storage | DTypeUsage::Accelerated);
  // Turing has no bf16 or f8 MMA.
  DeviceCapabilities turing = DeviceCapabilities::cuda(7, 5);
  EXPECT_EQ(dtypeUsage(turing, {BF16}), kStorageArithmetic);
  EXPECT_EQ(dtypeUsage(turing, {F16}), kStorageArithmetic | DTypeUsage::Accelerated);
}

TEST(DtypeCapability, VulkanFollowsTheDeviceFeatures) {
  VulkanDeviceProperties props;
  props.storage16 = props.float16 = props.int16 = true;
  props.storage8 = true; // but no shaderInt8
  DeviceCapabilities d = DeviceCapabilities::vulkan(props);
  EXPECT_TRUE(supportsDtype(d, {F32}));
  EXPECT_TRUE(supportsDtype(d, {F16}));
  EXPECT_FALSE(supportsDtype(d, {F64}));
  EXPECT_TRUE(dtypeUsage(d, {F64}).empty());
  EXPECT_EQ(dtypeUsage(d, {I8}), DTypeUsageSet(DTypeUsage::Storage));
  EXPECT_FALSE(supportsDtype(d, {I64}));
  // bf16: 16-bit integer bits around f32 arithmetic (kiln-spirv-bf16-as-i16).
  EXPECT_TRUE(supportsDtype(d, {BF16}));
  props.int16 = false;
  EXPECT_EQ(dtypeUsage(DeviceCapabilities::vulkan(props), {BF16}),
            DTypeUsageSet(DTypeUsage::Storage));
}

TEST(DtypeCapability, QuantizedNeedsAStorableScale) {
  DeviceCapabilities cpu = DeviceCapabilities::cpu();
  EXPECT_TRUE(supportsDtype(cpu, {I8, false, F32}));
  EXPECT_TRUE(supportsDtype(cpu, {I8, false, BF16}));
  VulkanDeviceProperties noF64;
  noF64.storage8 = noF64.int8 = true;
  DeviceCapabilities d = DeviceCapabilities::vulkan(noF64);
  EXPECT_TRUE(supportsDtype(d, {I8, false, F32}));
  EXPECT_FALSE(supportsDtype(d, {I8, false, F64}));
  EXPECT_TRUE(dtypeUsage(d, {I8, false, F64}).empty());
}

TEST(DtypeCapability, EachEngineAnswersForItsDevice) {
  auto cpu = Engine::create({DeviceType::Cpu, 0});
  ASSERT_TRUE(cpu);
  EXPECT_TRUE(supportsDtype((*cpu)->capabilities(), {F64}));
  if (VulkanDevice::deviceCount() > 0) {
    auto vk = Engine::create({DeviceType::Vulkan, 0});
    ASSERT_TRUE(vk) << vk.error().message;
    auto device = VulkanDevice::create(0);
    ASSERT_TRUE(device) << device.error().message;
    EXPECT_EQ(supportsDtype((*vk)->capabilities(), {F64}), (*device)->properties().float64);
  }
  // No CUDA engine here: CudaDeviceTest's last test leaves the process's
  // CUDA context poisoned; CUDA's answers are checked through
  // DeviceCapabilities::cuda above.
}
} // namespace
