//===- VulkanDeviceTest.cpp - Vulkan device enumeration ------------------===//
//
// CI installs Mesa's lavapipe, a Vulkan device on the CPU, so these run
// there; without a loader or device they check the reported reason instead.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/Compiler.h"
#include "kiln/backend/Capabilities.h"
#include "kiln/backend/Engine.h"
#include "kiln/backend/Target.h"
#include "kiln/runtime/vulkan/VulkanDevice.h"
#include "kiln/runtime/vulkan/VulkanProgram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

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
  std::printf("vulkan:0 is %s, subgroup %u, shared %u B, %u multiprocessors, %s\n",
              p.name.c_str(), p.subgroupSize, p.maxSharedMemoryBytes, p.multiprocessors,
              p.fingerprint().c_str());
  EXPECT_FALSE(p.name.empty());
  ASSERT_GT(p.subgroupSize, 0u);
  EXPECT_EQ(p.subgroupSize & (p.subgroupSize - 1), 0u) << "a power of two";
  EXPECT_GE(p.maxSharedMemoryBytes, 16384u);
  EXPECT_GE(p.maxWorkgroupInvocations, 128u);
  // NVIDIA's drivers have VK_NV_shader_sm_builtins (the H100: 132 SMs).
  if (p.vendorId == 0x10DE)
    EXPECT_GT(p.multiprocessors, 0u);
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

// The device's binding limit lowered to 4 (as a small device would report
// it): a chain of 7 inputs is split into kernels of at most 4 buffers that
// still add up on the real device, and a kernel that cannot be split (3
// buffers against a limit of 2) is refused with the limit named, never
// handed to the driver.
TEST(VulkanLimits, AFakeLowBindingLimitSplitsKernelsThatStillAddUp) {
  KILN_REQUIRE_VULKAN(device);
  auto compiler = createCompiler();
  CompileOptions options;
  options.vulkan = vulkanTargetOf(device->properties());
  options.vulkan.maxStorageBuffers = 4;
  constexpr int kInputs = 7;
  std::string args, body, acc = "%x0";
  for (int k = 0; k < kInputs; ++k)
    args += (k ? ", " : "") + std::string("%x") + std::to_string(k) + ": tensor<64xf32>";
  for (int k = 1; k < kInputs; ++k) {
    body += "  %a" + std::to_string(k) + " = kiln.add " + acc + ", %x" + std::to_string(k) +
            " : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>\n";
    acc = "%a" + std::to_string(k);
  }
  auto compiled = compiler->compileForVulkan("func.func @main(" + args +
                                                 ") -> tensor<64xf32> {\n" + body + "  return " +
                                                 acc + " : tensor<64xf32>\n}\n",
                                             options);
  ASSERT_TRUE(compiled) << compiled.error().message;
  EXPECT_GT(compiled->plan.launches.size(), 1u);
  for (const KernelLaunch &launch : compiled->plan.launches)
    EXPECT_LE(launch.arguments.size(), 4u) << launch.kernel;
  auto program = VulkanProgram::load(*device, compiled->plan);
  ASSERT_TRUE(program) << program.error().message;
  std::vector<std::vector<float>> data(kInputs + 1, std::vector<float>(64));
  std::vector<void *> buffers;
  for (int k = 0; k <= kInputs; ++k) {
    for (int i = 0; i < 64; ++i)
      data[k][i] = float(k * 100 + i);
    buffers.push_back(data[k].data());
  }
  ASSERT_TRUE((*program)->run(buffers.data()));
  for (int i = 0; i < 64; ++i)
    ASSERT_EQ(data[kInputs][i], float(100 * kInputs * (kInputs - 1) / 2 + kInputs * i)) << i;

  options.vulkan.maxStorageBuffers = 2;
  auto refused = compiler->compileForVulkan(R"(
    func.func @main(%a: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<64xf32> {
      %0 = kiln.add %a, %b : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
      return %0 : tensor<64xf32>
    })", options);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, ErrorKind::Unsupported);
  EXPECT_NE(refused.error().message.find("maxPerStageDescriptorStorageBuffers (2)"),
            std::string::npos)
      << refused.error().message;
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

// VK_KHR_cooperative_matrix, where the driver has it (NVIDIA's does;
// Debian 12's lavapipe, Mesa 22.3, has only VK_NV_cooperative_matrix): its
// subgroup shapes become the device's MMA configs, f16 x f16 -> f32 among
// them, and the extension is enabled.
TEST(VulkanDevice, CooperativeMatricesBecomeMmaConfigs) {
  KILN_REQUIRE_VULKAN(device);
  const VulkanDeviceProperties &p = device->properties();
  bool enabled = std::find(p.enabledExtensions.begin(), p.enabledExtensions.end(),
                           std::string("VK_KHR_cooperative_matrix")) != p.enabledExtensions.end();
  if (p.cooperativeMatrices.empty()) {
    EXPECT_TRUE(DeviceCapabilities::vulkan(p).mma.empty());
    GTEST_SKIP() << p.name << " reports no VK_KHR_cooperative_matrix shapes";
  }
  EXPECT_TRUE(enabled);
  DeviceCapabilities caps = DeviceCapabilities::vulkan(p);
  bool f16f32 = false;
  for (const MmaConfig &c : caps.mma) {
    std::printf("cooperative matrix %s x %s -> %s, m%dn%dk%d\n",
                elementTypeName(c.a).data(), elementTypeName(c.b).data(),
                elementTypeName(c.cd).data(), c.m, c.n, c.k);
    f16f32 |= c.a == ElementType::F16 && c.b == ElementType::F16 && c.cd == ElementType::F32;
  }
  EXPECT_TRUE(f16f32) << "no f16 x f16 -> f32 shape";
  EXPECT_TRUE(dtypeUsage(caps, DataType{ElementType::F16}).contains(DTypeUsage::Accelerated));
}

// The matmul kernel's shape comes from the device's list (no device needed):
// f16 x f16 -> f32 only, 16x16x16 first, one that a tiling of the kernel
// fits with the device's subgroup size and workgroup limits; none leaves
// matmuls as loop nests, as does a device below Vulkan 1.3 (the kernels are
// SPIR-V 1.6).
TEST(VulkanTarget, TakesTheF16CooperativeMatrixTheMatmulKernelTiles) {
  using enum VulkanComponentType;
  VulkanDeviceProperties p;
  p.subgroupSize = 32;
  p.maxWorkgroupInvocations = 1024;
  p.maxSharedMemoryBytes = 49152;
  p.apiVersion = (1u << 22) | (3u << 12); // Vulkan 1.3: SPIR-V 1.6
  p.cooperativeMatrices = {{16, 8, 16, F16, F16, F32, F32}, {16, 16, 16, F16, F16, F16, F16},
                           {16, 16, 32, I8, I8, I32, I32}, {16, 16, 16, F16, F16, F32, F32},
                           {16, 8, 8, F16, F16, F32, F32}};
  VulkanTarget t = vulkanTargetOf(p);
  EXPECT_EQ(t.f16CooperativeMatrix, (std::array<uint32_t, 3>{16, 16, 16}));
  EXPECT_EQ(t.subgroupSize, 32u);
  EXPECT_EQ(t.maxWorkgroupBytes, 49152u);
  // Subgroups of 64 take a tiling of 512 invocations; of 256, none fits
  // 1024 invocations; nor does any fit 8 KiB of workgroup memory.
  p.subgroupSize = 64;
  EXPECT_EQ(vulkanTargetOf(p).f16CooperativeMatrix, (std::array<uint32_t, 3>{16, 16, 16}));
  p.subgroupSize = 256;
  EXPECT_EQ(vulkanTargetOf(p).f16CooperativeMatrix, (std::array<uint32_t, 3>{0, 0, 0}));
  p.subgroupSize = 32;
  p.maxSharedMemoryBytes = 8192;
  EXPECT_EQ(vulkanTargetOf(p).f16CooperativeMatrix, (std::array<uint32_t, 3>{0, 0, 0}));
  p.maxSharedMemoryBytes = 49152;
  p.cooperativeMatrices.erase(p.cooperativeMatrices.begin() + 3);
  EXPECT_EQ(vulkanTargetOf(p).f16CooperativeMatrix, (std::array<uint32_t, 3>{16, 8, 16}));
  p.apiVersion = (1u << 22) | (2u << 12);
  EXPECT_EQ(vulkanTargetOf(p).f16CooperativeMatrix, (std::array<uint32_t, 3>{0, 0, 0}));
  p.apiVersion = (1u << 22) | (3u << 12);
  p.cooperativeMatrices = {{48, 16, 16, F16, F16, F32, F32}, {16, 16, 16, F16, F16, F16, F16}};
  EXPECT_EQ(vulkanTargetOf(p).f16CooperativeMatrix, (std::array<uint32_t, 3>{0, 0, 0}));
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

// KILN_VULKAN_PIPELINE_STATS=1 when the device is created: where the driver
// has VK_KHR_pipeline_executable_properties (NVIDIA's does; Debian 12's
// lavapipe does not), each kernel's statistics are printed as its pipeline
// is created; without the variable, the extension stays off.
TEST(VulkanDevice, PipelineStatisticsWhenAsked) {
  if (VulkanDevice::deviceCount() == 0)
    GTEST_SKIP() << "no Vulkan device: " << VulkanDevice::unavailableReason();
  ::unsetenv("KILN_VULKAN_PIPELINE_STATS");
  auto plain = VulkanDevice::create(0);
  ASSERT_TRUE(plain) << plain.error().message;
  const auto &plainExtensions = (*plain)->properties().enabledExtensions;
  EXPECT_FALSE((*plain)->properties().pipelineStatistics);
  EXPECT_EQ(std::find(plainExtensions.begin(), plainExtensions.end(),
                      std::string("VK_KHR_pipeline_executable_properties")),
            plainExtensions.end());
  ::setenv("KILN_VULKAN_PIPELINE_STATS", "1", 1);
  auto device = VulkanDevice::create(0);
  ::unsetenv("KILN_VULKAN_PIPELINE_STATS");
  ASSERT_TRUE(device) << device.error().message;
  if (!(*device)->properties().pipelineStatistics)
    GTEST_SKIP() << (*device)->properties().name
                 << " has no VK_KHR_pipeline_executable_properties";
  auto compiler = createCompiler();
  CompileOptions options;
  options.vulkan = vulkanTargetOf((*device)->properties());
  auto compiled = compiler->compileForVulkan(R"(
    func.func @main(%a: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<64xf32> {
      %0 = kiln.add %a, %b : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
      return %0 : tensor<64xf32>
    })", options);
  ASSERT_TRUE(compiled) << compiled.error().message;
  testing::internal::CaptureStderr();
  auto program = VulkanProgram::load(**device, compiled->plan);
  std::string log = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(program) << program.error().message;
  std::printf("%s", log.c_str());
  const std::string &kernel = compiled->plan.launches.at(0).kernel;
  size_t line = log.find("kiln: vulkan kernel " + kernel);
  ASSERT_NE(line, std::string::npos) << log;
  EXPECT_NE(log.find(" = ", line), std::string::npos) << "no statistic: " << log;
}
