//===- VulkanTarget.cpp - Vulkan devices as a kiln target ----------------===//
//
// Programs are SPIR-V modules with a GpuPlan, compiled for the features the
// device reports; tensors live in VkBuffer pages a VulkanExecutor owns;
// launches are queued in batches without waiting; timing uses timestamp queries where the device
// has them; captures record into one command buffer.
//
//===----------------------------------------------------------------------===//
#include "CachedProgram.h"
#include "DeviceQueue.h"
#include "kiln/Lowering/SPIRV/MatmulTunables.h"
#include "kiln/runtime/vulkan/VulkanExecutor.h"

#include <mutex>
#include <optional>

namespace kiln {
namespace {

class VulkanTargetProgram final : public Program {
public:
  /// `runTimeSized`: the plan of a program with `?` dims (`vulkan` is then
  /// its plan at size 0, which compiled the pipelines).
  VulkanTargetProgram(CompiledProgram compiled, std::unique_ptr<VulkanProgram> vulkan,
                      VulkanDevice &device, std::optional<GpuPlan> runTimeSized)
      : Program(std::move(compiled), temporaryBytesOf(vulkan->gpuPlan())),
        vulkan(std::move(vulkan)), device(device), runTimeSized(std::move(runTimeSized)) {}
  Expected<void> runUnchecked(void **buffers, const int64_t *sizes) const override {
    if (!runTimeSized)
      return vulkan->run(buffers);
    // A VulkanProgram holds buffers and command buffers of one size: the
    // last run's is kept, and a run of other sizes loads another (its
    // pipelines from the driver's pipeline cache).
    std::vector<int64_t> dims(sizes, sizes + dimCount());
    std::lock_guard lock(sizedMutex);
    if (!sized || sizedDims != dims) {
      auto plan = runTimeSized->at(dims);
      if (!plan)
        return std::unexpected(plan.error());
      auto cache = vulkan->pipelineCacheData();
      if (!cache)
        return std::unexpected(cache.error());
      auto loaded = VulkanProgram::load(device, std::move(*plan), *cache);
      if (!loaded)
        return std::unexpected(loaded.error());
      sized = std::move(*loaded);
      sizedDims = std::move(dims);
    }
    return sized->run(buffers);
  }
  /// Device-resident launches go through the queue's executor: the
  /// pipelines of `program()`, at sizesOf's plan where the program has
  /// run-time sizes.
  VulkanProgram &program() const { return *vulkan; }
  Expected<LaunchSizes> sizesOf(std::vector<int64_t> dims) const {
    if (!runTimeSized)
      return LaunchSizes{std::move(dims), nullptr};
    auto evaluate = [&](const std::vector<int64_t> &at) -> Expected<GpuPlan> {
      auto plan = runTimeSized->launchesAt(at);
      if (!plan)
        return plan;
      if (auto ok = VulkanProgram::checkLimits(*plan, device.properties()); !ok)
        return std::unexpected(ok.error());
      return plan;
    };
    return lastSizes.at(std::move(dims), evaluate);
  }

private:
  std::unique_ptr<VulkanProgram> vulkan;
  VulkanDevice &device;
  std::optional<GpuPlan> runTimeSized;
  mutable std::mutex sizedMutex;
  mutable std::unique_ptr<VulkanProgram> sized;
  mutable std::vector<int64_t> sizedDims;
  LastLaunchSizes lastSizes;
};

/// Tensors in Vulkan device memory; launches queued without waits; device
/// timestamps; captures recorded into one command buffer.
class VulkanQueue final : public DeviceQueue {
public:
  VulkanQueue(std::shared_ptr<Engine> engine, std::unique_ptr<VulkanExecutor> executor)
      : DeviceQueue(std::move(engine)), executor(std::move(executor)) {}

  MemoryPool &pool() override { return executor->pool(); }
  Expected<uint64_t> allocateExact(size_t bytes) override {
    return executor->allocatePage(bytes);
  }
  void releaseExact(uint64_t address) override { executor->releasePage(address); }
  Expected<void> write(uint64_t dst, const void *src, size_t bytes) override {
    return executor->write(dst, src, bytes);
  }
  Expected<void> read(void *dst, uint64_t src, size_t bytes) override {
    return executor->read(dst, src, bytes);
  }
  // This queue's engine compiled the programs, for this target.
  Expected<LaunchSizes> sizesOf(const Program &program, std::vector<int64_t> dims) override {
    return static_cast<const VulkanTargetProgram &>(program).sizesOf(std::move(dims));
  }
  Expected<void> launch(const Program &program, const std::vector<uint64_t> &buffers,
                        const LaunchSizes &sizes) override {
    return executor->launch(static_cast<const VulkanTargetProgram &>(program).program(),
                            buffers, sizes.plan.get());
  }
  Expected<void> sync() override { return executor->sync(); }
  Expected<void> flush() override { return executor->flush(); }
  bool poisoned() const override { return executor->lost(); }

  Expected<std::shared_ptr<void>> mark() override {
    if (!executor->hasTimestamps())
      return hostClockMark();
    auto ns = executor->timestampNs();
    if (!ns)
      return std::unexpected(ns.error());
    return std::make_shared<double>(*ns * 1e-6);
  }
  Expected<double> elapsedMs(void *start, void *end) override {
    return millisecondsBetween(start, end);
  }
  const char *clockName() const override {
    return executor->hasTimestamps() ? "vulkan-timestamps" : "host";
  }

  bool capturesNatively() const override { return true; }
  Expected<void> beginCapture() override { return executor->beginCapture(); }
  Expected<std::shared_ptr<void>> endCapture() override { return executor->endCapture(); }
  Expected<void> replay(void *graph) override { return executor->replay(graph); }

  Expected<std::shared_ptr<void>> allocateStaging(size_t bytes) override {
    return allocateHostStaging(bytes);
  }

private:
  std::unique_ptr<VulkanExecutor> executor;
};


/// (Named apart from lowering's VulkanTarget, the features SPIR-V may use.)
class VulkanDeviceTarget final : public Target {
public:
  explicit VulkanDeviceTarget(std::unique_ptr<VulkanDevice> device)
      : device(std::move(device)), fingerprint_(this->device->properties().fingerprint()),
        compileTarget(vulkanTargetOf(this->device->properties())) {}
  std::string model() const override { return device->properties().name; }
  const std::string &fingerprint() const override { return fingerprint_; }
  DeviceCapabilities capabilities() const override {
    return DeviceCapabilities::vulkan(device->properties());
  }

  bool sharesAddresses() const override { return false; }

  Expected<std::shared_ptr<Program>> compile(Compiler &compiler, ParsedProgram program,
                                             const CompileOptions &options,
                                             CachedProgram &cached) override {
    CompileOptions forDevice = options;
    forDevice.vulkan = compileTarget;
    auto compiled = compiler.compileForVulkan(std::move(program), forDevice);
    if (!compiled)
      return std::unexpected(compiled.error());
    cached.plan = std::move(compiled->plan);
    cached.program = std::move(*compiled);
    auto loaded = load(cached);
    if (!loaded)
      return loaded;
    // The driver's pipeline-cache data, so that a later load skips its
    // SPIR-V compiler.
    auto data = static_cast<VulkanTargetProgram &>(**loaded).program().pipelineCacheData();
    if (!data)
      return std::unexpected(data.error());
    cached.pipelineCache = std::move(*data);
    return loaded;
  }

  Expected<std::shared_ptr<Program>> load(const CachedProgram &cached) override {
    std::optional<GpuPlan> runTimeSized;
    GpuPlan plan = cached.plan;
    if (plan.hasRunTimeSizes()) {
      auto atZero =
          plan.at(std::vector<int64_t>(Program::dimCountOf(cached.program), 0));
      if (!atZero)
        return std::unexpected(atZero.error());
      runTimeSized = std::move(plan);
      plan = std::move(*atZero);
    }
    auto vulkan = VulkanProgram::load(*device, std::move(plan), cached.pipelineCache);
    if (!vulkan)
      return std::unexpected(vulkan.error());
    return std::make_shared<VulkanTargetProgram>(cached.program, std::move(*vulkan), *device,
                                                 std::move(runTimeSized));
  }

  Expected<std::shared_ptr<DeviceQueue>> makeQueue(std::shared_ptr<Engine> engine) override {
    auto executor = VulkanExecutor::create(*device);
    if (!executor)
      return std::unexpected(executor.error());
    return std::make_shared<VulkanQueue>(std::move(engine), std::move(*executor));
  }

private:
  std::unique_ptr<VulkanDevice> device;
  std::string fingerprint_;
  VulkanTarget compileTarget;
};

Expected<std::unique_ptr<Target>> openVulkan(int index) {
  auto device = VulkanDevice::create(index);
  if (!device)
    return std::unexpected(device.error());
  return std::make_unique<VulkanDeviceTarget>(std::move(*device));
}

Expected<OfflineCompile> compileVulkanOffline(Compiler &compiler, std::string_view source,
                                              const CompileOptions &options) {
  auto compiled = compiler.compileForVulkan(source, options);
  if (!compiled)
    return std::unexpected(compiled.error());
  std::string artifacts = std::to_string(compiled->plan.modules.size()) +
                          " SPIR-V module(s), " +
                          std::to_string(compiled->plan.launches.size()) + " launch(es)";
  return OfflineCompile{std::move(*compiled), "vulkan", std::move(artifacts)};
}

} // namespace

/// The device's f16 x f16 -> f32 cooperative-matrix shape that one of
/// kiln-spirv-tile-matmul's tilings fits (whole matrices per subgroup tile
/// and K step, loads shared evenly by the subgroups' invocations),
/// 16x16x16 first; zeros when it has none.
static std::array<uint32_t, 3> f16CooperativeMatrixOf(const VulkanDeviceProperties &device) {
  std::array<uint32_t, 3> best = {0, 0, 0};
  // The kernels are SPIR-V 1.6, which needs Vulkan 1.3 (VK_API_VERSION_1_3).
  if (device.apiVersion < ((1u << 22) | (3u << 12)))
    return best;
  for (const VulkanCooperativeMatrix &c : device.cooperativeMatrices) {
    using enum VulkanComponentType;
    if (c.a != F16 || c.b != F16 || c.c != F32 || c.result != F32 || c.m == 0 || c.n == 0 ||
        c.k == 0 ||
        !VulkanCoopMatmulTunables::forDevice({c.m, c.n, c.k, device.subgroupSize,
                                              device.maxWorkgroupInvocations,
                                              device.maxSharedMemoryBytes}))
      continue;
    if (best[0] == 0 || (c.m == 16 && c.n == 16 && c.k == 16))
      best = {c.m, c.n, c.k};
  }
  return best;
}

VulkanTarget vulkanTargetOf(const VulkanDeviceProperties &device) {
  VulkanTarget t;
  t.float16 = device.float16;
  t.float64 = device.float64;
  t.int8 = device.int8;
  t.int16 = device.int16;
  t.int64 = device.int64;
  t.storage8 = device.storage8;
  t.storage16 = device.storage16;
  t.maxWorkgroupCount = {device.maxWorkgroupCount[0], device.maxWorkgroupCount[1],
                         device.maxWorkgroupCount[2]};
  t.preserveNan16 = device.preserveNan16;
  t.preserveNan32 = device.preserveNan32;
  t.preserveNan64 = device.preserveNan64;
  t.preserveDenorm16 = device.preserveDenorm16;
  t.preserveDenorm32 = device.preserveDenorm32;
  t.preserveDenorm64 = device.preserveDenorm64;
  t.maxStorageBuffers =
      std::min(device.maxStorageBuffersPerStage, device.maxStorageBuffersPerSet);
  t.subgroupSize = device.subgroupSize;
  t.float32AtomicAdd = device.float32AtomicAdd;
  t.float64AtomicAdd = device.float64AtomicAdd;
  t.int64AtomicAdd = device.int64Atomics && device.int64;
  // Only llvmpipe's loop limiter is known to end loops.
  if (device.name.find("llvmpipe") == std::string::npos)
    t.maxInvocationLoopIterations = 0;
  t.maxWorkgroupBytes = device.maxSharedMemoryBytes;
  t.maxWorkgroupInvocations = device.maxWorkgroupInvocations;
  t.multiprocessors = device.multiprocessors;
  t.f16CooperativeMatrix = f16CooperativeMatrixOf(device);
  return t;
}

namespace targets {
extern const TargetKind vulkan{DeviceType::Vulkan, "vulkan", VulkanDevice::deviceCount,
                               openVulkan, compileVulkanOffline};
} // namespace targets

} // namespace kiln
