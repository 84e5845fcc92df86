//===- VulkanDeviceTest.cpp - Vulkan device enumeration ------------------===//
//
// CI installs Mesa's lavapipe, a Vulkan device on the CPU, so these run
// there; without a loader or device they check the reported reason instead.
//
//===----------------------------------------------------------------------===//
#include "kiln/backend/Engine.h"
#include "kiln/runtime/vulkan/VulkanDevice.h"
#include "kiln/runtime/vulkan/VulkanProgram.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace kiln;

TEST(VulkanDevice, NoDeviceGivesAReasonNotAnError) {
  if (VulkanDevice::deviceCount() > 0)
    GTEST_SKIP() << "this machine has Vulkan devices";
  EXPECT_FALSE(VulkanDevice::unavailableReason().empty());
  auto device = VulkanDevice::create(0);
  ASSERT_FALSE(device);
  EXPECT_EQ(device.error().kind, ErrorKind::InvalidArgument);
}

TEST(VulkanDevice, PropertiesComeFromTheDevice) {
  if (VulkanDevice::deviceCount() == 0)
    GTEST_SKIP() << "no Vulkan device: " << VulkanDevice::unavailableReason();
  auto device = VulkanDevice::create(0);
  ASSERT_TRUE(device) << device.error().message;
  const VulkanDeviceProperties &p = (*device)->properties();
  std::printf("vulkan:0 is %s, subgroup %u, shared %u B, %s\n", p.name.c_str(),
              p.subgroupSize, p.maxSharedMemoryBytes, p.fingerprint().c_str());
  EXPECT_FALSE(p.name.empty());
  ASSERT_GT(p.subgroupSize, 0u);
  EXPECT_EQ(p.subgroupSize & (p.subgroupSize - 1), 0u) << "a power of two";
  EXPECT_GE(p.maxSharedMemoryBytes, 16384u);
  EXPECT_GE(p.maxWorkgroupInvocations, 128u);
  EXPECT_EQ(p.fingerprint().rfind("vulkan-", 0), 0u);
  auto beyond = VulkanDevice::create(VulkanDevice::deviceCount());
  ASSERT_FALSE(beyond);
  EXPECT_EQ(beyond.error().kind, ErrorKind::InvalidArgument);
}

// One test per device limit kiln depends on, against the device's real
// limits (lavapipe's in CI): a plan beyond a limit is refused at load with
// an error naming the limit, before anything reaches the driver (lavapipe
// crashed on more storage buffers than it has).
namespace {
std::unique_ptr<VulkanDevice> firstDevice() {
  if (VulkanDevice::deviceCount() == 0)
    return nullptr;
  auto device = VulkanDevice::create(0);
  return device ? std::move(*device) : nullptr;
}

/// One launch of a kernel never built: every check comes before the driver.
GpuPlan planWithOneLaunch(size_t buffers) {
  GpuPlan plan;
  plan.modules = {std::string(20, '\0')};
  plan.bufferBytes.assign(buffers, 64);
  plan.inputCount = buffers - 1;
  plan.outputCount = 1;
  KernelLaunch launch;
  launch.kernel = "k";
  for (size_t b = 0; b < buffers; ++b)
    launch.arguments.push_back(BufferView{static_cast<int>(b), 0, {16}, {1}});
  plan.launches.push_back(launch);
  return plan;
}

void expectRefused(VulkanDevice &device, GpuPlan plan, const std::string &limit) {
  auto program = VulkanProgram::load(device, std::move(plan));
  ASSERT_FALSE(program) << limit << " not checked";
  EXPECT_EQ(program.error().kind, ErrorKind::Unsupported);
  EXPECT_NE(program.error().message.find(limit), std::string::npos)
      << program.error().message;
}
} // namespace

#define KILN_REQUIRE_VULKAN(device)                                            \
  auto device = firstDevice();                                                 \
  if (!device)                                                                 \
    GTEST_SKIP() << "no Vulkan device: " << VulkanDevice::unavailableReason();

TEST(VulkanLimits, StorageBuffersPerKernel) {
  KILN_REQUIRE_VULKAN(device);
  const VulkanDeviceProperties &p = device->properties();
  ASSERT_GT(p.maxStorageBuffersPerStage, 3u);
  std::printf("maxPerStageDescriptorStorageBuffers %u, per set %u\n",
              p.maxStorageBuffersPerStage, p.maxStorageBuffersPerSet);
  uint32_t limit = std::min(p.maxStorageBuffersPerStage, p.maxStorageBuffersPerSet);
  if (limit < 4096) // NVIDIA's is effectively unbounded
    expectRefused(*device, planWithOneLaunch(limit + 1),
                  "maxPerStageDescriptorStorageBuffers");
}

TEST(VulkanLimits, KernelsAtAndBeyondTheStorageBufferLimitRun) {
  KILN_REQUIRE_VULKAN(device);
  uint32_t limit = std::min(device->properties().maxStorageBuffersPerStage,
                            device->properties().maxStorageBuffersPerSet);
  if (limit > 64)
    GTEST_SKIP() << "the device allows " << limit << " storage buffers";
  // limit - 1 inputs added in one fused kernel, plus its output.
  int inputs = static_cast<int>(limit) - 1;
  std::string args, body, acc = "%x0";
  for (int k = 0; k < inputs; ++k)
    args += (k ? ", " : "") + std::string("%x") + std::to_string(k) + ": tensor<256xf32>";
  for (int k = 1; k < inputs; ++k) {
    body += "  %a" + std::to_string(k) + " = kiln.add " + acc + ", %x" +
            std::to_string(k) + " : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>\n";
    acc = "%a" + std::to_string(k);
  }
  std::string source = "func.func @main(" + args + ") -> tensor<256xf32> {\n" + body +
                       "  return " + acc + " : tensor<256xf32>\n}\n";
  auto engine = Engine::create({DeviceType::Vulkan, 0});
  ASSERT_TRUE(engine) << engine.error().message;
  auto program = (*engine)->compile(source);
  ASSERT_TRUE(program) << program.error().message;
  std::vector<HostTensor> in;
  for (int k = 0; k < inputs; ++k) {
    HostTensor t(DType::F32, {256});
    for (int i = 0; i < 256; ++i)
      reinterpret_cast<float *>(t.data.data())[i] = float(k);
    in.push_back(std::move(t));
  }
  auto out = (*program)->run(in);
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(reinterpret_cast<const float *>((*out)[0].data.data())[255],
            float(inputs * (inputs - 1) / 2));
  // One more input would need limit + 1 bindings: the chain is split into
  // two kernels at compile time, and still adds up.
  std::string more = "func.func @main(" + args + ", %y: tensor<256xf32>) -> tensor<256xf32> {\n" +
                     body + "  %z = kiln.add " + acc +
                     ", %y : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>\n"
                     "  return %z : tensor<256xf32>\n}\n";
  auto split = (*engine)->compile(more);
  ASSERT_TRUE(split) << split.error().message;
  HostTensor y(DType::F32, {256});
  for (int i = 0; i < 256; ++i)
    reinterpret_cast<float *>(y.data.data())[i] = 1000.0f;
  in.push_back(std::move(y));
  auto sum = (*split)->run(in);
  ASSERT_TRUE(sum) << sum.error().message;
  EXPECT_EQ(reinterpret_cast<const float *>((*sum)[0].data.data())[0],
            float(inputs * (inputs - 1) / 2) + 1000.0f);
}

TEST(VulkanLimits, WorkgroupCount) {
  KILN_REQUIRE_VULKAN(device);
  GpuPlan plan = planWithOneLaunch(2);
  plan.launches[0].shape.grid[1] = device->properties().maxWorkgroupCount[1] + 1;
  expectRefused(*device, std::move(plan), "maxComputeWorkGroupCount");
}

TEST(VulkanLimits, WorkgroupSize) {
  KILN_REQUIRE_VULKAN(device);
  GpuPlan plan = planWithOneLaunch(2);
  plan.launches[0].shape.block[2] = device->properties().maxWorkgroupSize[2] + 1;
  expectRefused(*device, std::move(plan), "maxComputeWorkGroupSize");
}

TEST(VulkanLimits, InvocationsPerWorkgroup) {
  KILN_REQUIRE_VULKAN(device);
  const VulkanDeviceProperties &p = device->properties();
  GpuPlan plan = planWithOneLaunch(2);
  // Each dim within its own limit, the product beyond the total.
  plan.launches[0].shape.block = {std::min(p.maxWorkgroupSize[0], p.maxWorkgroupInvocations),
                                  std::min(p.maxWorkgroupSize[1], 2u), 1};
  if (uint64_t(plan.launches[0].shape.block[0]) * plan.launches[0].shape.block[1] <=
      p.maxWorkgroupInvocations)
    GTEST_SKIP() << "no block within each dim's limit exceeds the total";
  expectRefused(*device, std::move(plan), "maxComputeWorkGroupInvocations");
}

TEST(VulkanLimits, SharedMemory) {
  KILN_REQUIRE_VULKAN(device);
  GpuPlan plan = planWithOneLaunch(2);
  plan.launches[0].shape.sharedMemoryBytes = device->properties().maxSharedMemoryBytes + 1;
  expectRefused(*device, std::move(plan), "maxComputeSharedMemorySize");
}

TEST(VulkanLimits, StorageBufferRange) {
  KILN_REQUIRE_VULKAN(device);
  GpuPlan plan = planWithOneLaunch(2);
  plan.bufferBytes[1] = size_t(device->properties().maxStorageBufferRange) + 4;
  expectRefused(*device, std::move(plan), "maxStorageBufferRange");
}

TEST(VulkanLimits, PushConstantBytes) {
  // Scalar parameters (run-time sizes) are push constants: beyond the
  // device's maxPushConstantsSize (128 bytes guaranteed) they are refused
  // before any pipeline is created.
  KILN_REQUIRE_VULKAN(device);
  uint32_t limit = device->properties().maxPushConstantsBytes;
  EXPECT_GE(limit, 128u);
  GpuPlan plan = planWithOneLaunch(2);
  for (uint32_t bytes = 0; bytes <= limit; bytes += 4)
    plan.launches[0].arguments.push_back(ScalarArgument{1, 4});
  expectRefused(*device, std::move(plan), "maxPushConstantsSize");
}

TEST(VulkanDevice, EnablesTheExtensionsItsFeaturesNeed) {
  KILN_REQUIRE_VULKAN(device);
  // kiln's instance is Vulkan 1.1: 8-bit storage and Int8/Float16 are
  // extensions there and must be enabled where SPIR-V may declare them.
  const VulkanDeviceProperties &p = device->properties();
  auto enabled = [&](const char *name) {
    return std::find(p.enabledExtensions.begin(), p.enabledExtensions.end(), name) !=
           p.enabledExtensions.end();
  };
  if (p.storage8)
    EXPECT_TRUE(enabled("VK_KHR_8bit_storage"));
  if (p.int8 || p.float16)
    EXPECT_TRUE(enabled("VK_KHR_shader_float16_int8"));
  if (p.preserveNan32)
    EXPECT_TRUE(enabled("VK_KHR_shader_float_controls"));
}
