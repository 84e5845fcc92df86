//===- CpuTarget.cpp - the host CPU as a kiln target ---------------------===//
//
// Programs are native code, linked into shared objects where the system
// has a linker (runtime/cpu/SharedKernel.h), else objects for the JIT;
// tensors live in pooled host memory and launches run when they are made.
//
//===----------------------------------------------------------------------===//
#include "CachedProgram.h"
#include "DeviceQueue.h"
#include "kiln/runtime/common/CopyBytes.h"
#include "kiln/runtime/cpu/CpuDevice.h"
#include "kiln/runtime/cpu/SharedKernel.h"

#include <algorithm>
#include <thread>

namespace kiln {
namespace {

class CpuProgram final : public Program {
public:
  CpuProgram(CompiledProgram compiled, std::shared_ptr<CpuExecutable> executable)
      : Program(std::move(compiled)), executable(std::move(executable)) {}
  Expected<void> runUnchecked(void **buffers, const int64_t *sizes) const override {
    executable->run(buffers, sizes);
    return {};
  }

private:
  std::shared_ptr<CpuExecutable> executable;
};

/// Tensors in host memory; launches run synchronously as they are made.
class HostQueue final : public DeviceQueue {
public:
  explicit HostQueue(std::shared_ptr<Engine> engine)
      : DeviceQueue(std::move(engine)), memoryPool(MemoryPool::PageSource{allocateHost, freeHost}) {}

  MemoryPool &pool() override { return memoryPool; }
  Expected<uint64_t> allocateExact(size_t bytes) override { return allocateHost(bytes); }
  void releaseExact(uint64_t address) override { freeHost(address); }
  Expected<void> write(uint64_t dst, const void *src, size_t bytes) override {
    copyBytes(reinterpret_cast<void *>(dst), src, bytes);
    return {};
  }
  Expected<void> read(void *dst, uint64_t src, size_t bytes) override {
    copyBytes(dst, reinterpret_cast<const void *>(src), bytes);
    return {};
  }
  Expected<void> launch(const Program &program, const std::vector<uint64_t> &buffers,
                        const LaunchSizes &sizes) override {
    std::vector<void *> pointers(buffers.size());
    std::ranges::transform(buffers, pointers.begin(),
                           [](uint64_t address) { return reinterpret_cast<void *>(address); });
    // The entry reads its `?` dims from the sizes (static programs: none).
    return program.runUnchecked(pointers.data(), sizes.dims.empty() ? nullptr : sizes.dims.data());
  }
  Expected<void> sync() override { return {}; }
  bool poisoned() const override { return false; }

  Expected<std::shared_ptr<void>> mark() override { return hostClockMark(); }
  Expected<double> elapsedMs(void *start, void *end) override {
    return millisecondsBetween(start, end);
  }
  const char *clockName() const override { return "host"; }
  bool capturesNatively() const override { return false; }

  Expected<std::shared_ptr<void>> allocateStaging(size_t bytes) override {
    return allocateHostStaging(bytes);
  }

private:
  MemoryPool memoryPool;
};

class CpuTarget final : public Target {
public:
  // Kernels are generated for the machine's thread count unless the
  // options name one (then codegenKey says it).
  explicit CpuTarget(std::unique_ptr<CpuDevice> device)
      : device(std::move(device)),
        fingerprint_(this->device->fingerprint() + "-threads" +
                     std::to_string(std::thread::hardware_concurrency())) {}
  std::string model() const override { return "host"; }
  const std::string &fingerprint() const override { return fingerprint_; }
  DeviceCapabilities capabilities() const override { return DeviceCapabilities::cpu(); }

  Expected<std::shared_ptr<Program>> compile(Compiler &compiler, ParsedProgram program,
                                             const CompileOptions &options,
                                             CachedProgram &cached) override {
    auto compiled = compiler.compileForCpu(std::move(program), options);
    if (!compiled)
      return std::unexpected(compiled.error());
    std::string object = std::move(compiled->object);
    cached.program = std::move(*compiled);
    // Linked now, so that later processes load it without LLVM; a kernel
    // that needs what kiln's CPU runtime lacks stays an object, for the JIT.
    if (auto linked = linkSharedKernel(object)) {
      cached.object = std::move(*linked);
      if (auto program = load(cached))
        return program;
    }
    cached.object = std::move(object);
    return load(cached);
  }

  Expected<std::shared_ptr<Program>> load(const CachedProgram &cached) override {
    auto executable = device->load(cached.object);
    if (!executable)
      return std::unexpected(executable.error());
    return std::make_shared<CpuProgram>(cached.program, std::move(*executable));
  }

  Expected<std::shared_ptr<DeviceQueue>> makeQueue(std::shared_ptr<Engine> engine) override {
    return std::make_shared<HostQueue>(std::move(engine));
  }

private:
  std::unique_ptr<CpuDevice> device;
  std::string fingerprint_;
};

Expected<std::unique_ptr<Target>> openCpu(int index) {
  if (index != 0)
    return makeError(ErrorKind::InvalidArgument,
                     "device cpu:" + std::to_string(index) +
                         " does not exist (one CPU device: cpu:0)");
  auto device = CpuDevice::create();
  if (!device)
    return std::unexpected(device.error());
  return std::make_unique<CpuTarget>(std::move(*device));
}

Expected<OfflineCompile> compileCpuOffline(Compiler &compiler, std::string_view source,
                                           const CompileOptions &options) {
  auto compiled = compiler.compileForCpu(source, options);
  if (!compiled)
    return std::unexpected(compiled.error());
  return OfflineCompile{std::move(*compiled), "cpu", "1 object"};
}

} // namespace

namespace targets {
extern const TargetKind cpu{DeviceType::Cpu, "cpu", [] { return 1; }, openCpu,
                            compileCpuOffline};
} // namespace targets

} // namespace kiln
