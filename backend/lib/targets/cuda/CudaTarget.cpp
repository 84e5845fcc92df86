//===- CudaTarget.cpp - NVIDIA GPUs as a kiln target ---------------------===//
//
// Programs are PTX (or cubin) modules with a GpuPlan, loaded through the
// CUDA driver; tensors live in the device's memory pool, launches queue on
// its stream, timing uses CUDA events and captures are CUDA graphs.
//
//===----------------------------------------------------------------------===//
#include "CachedProgram.h"
#include "DeviceQueue.h"

#include "kiln/runtime/cuda/CudaProgram.h"
#include "kiln/runtime/cuda/CudaToolkit.h"

#include <atomic>
#include <chrono>
#include <cstdio>

namespace kiln {
namespace {

class CudaTargetProgram final : public Program {
public:
  CudaTargetProgram(CompiledProgram compiled, std::unique_ptr<CudaProgram> cuda)
      : Program(std::move(compiled), temporaryBytesOf(cuda->gpuPlan())), cuda(std::move(cuda)) {}
  Expected<void> runUnchecked(void **buffers, const int64_t *sizes) const override {
    return cuda->run(buffers, std::span(sizes, sizes ? dimCount() : 0));
  }
  /// The plan at one launch's dims (a program with `?` dims).
  Expected<LaunchSizes> sizesOf(std::vector<int64_t> dims) const {
    return lastSizes.at(std::move(dims), [&](const std::vector<int64_t> &at) {
      return cuda->gpuPlan().launchesAt(at);
    });
  }
  Expected<void> launch(const std::vector<uint64_t> &buffers, const LaunchSizes &sizes) const {
    return cuda->launchAll(sizes.plan ? *sizes.plan : cuda->gpuPlan(), buffers);
  }

private:
  std::unique_ptr<CudaProgram> cuda;
  LastLaunchSizes lastSizes;
};

/// Tensors in CUDA device memory; launches queue on the device's stream.
class CudaQueue final : public DeviceQueue {
public:
  CudaQueue(std::shared_ptr<Engine> engine, CudaDevice &device)
      : DeviceQueue(std::move(engine)), device(device) {}

  MemoryPool &pool() override { return device.pool(); }
  Expected<uint64_t> allocateExact(size_t bytes) override { return device.allocate(bytes); }
  void releaseExact(uint64_t address) override { (void)device.free(address); }
  Expected<void> write(uint64_t dst, const void *src, size_t bytes) override {
    return device.copyToDevice(dst, src, bytes);
  }
  Expected<void> read(void *dst, uint64_t src, size_t bytes) override {
    if (auto ok = device.sync(); !ok)
      return ok;
    return device.copyToHost(dst, src, bytes);
  }
  // This queue's engine compiled the programs, for this target.
  Expected<LaunchSizes> sizesOf(const Program &program, std::vector<int64_t> dims) override {
    return static_cast<const CudaTargetProgram &>(program).sizesOf(std::move(dims));
  }
  Expected<void> launch(const Program &program, const std::vector<uint64_t> &buffers,
                        const LaunchSizes &sizes) override {
    return static_cast<const CudaTargetProgram &>(program).launch(buffers, sizes);
  }
  Expected<void> sync() override { return device.sync(); }
  bool poisoned() const override { return device.poisoned(); }

  Expected<std::shared_ptr<void>> mark() override {
    auto event = device.recordEvent();
    if (!event)
      return std::unexpected(event.error());
    return std::shared_ptr<void>(*event, [&device = device](void *e) { device.destroyEvent(e); });
  }
  Expected<double> elapsedMs(void *start, void *end) override {
    return device.elapsedMs(start, end);
  }
  const char *clockName() const override { return "cuda-events"; }

  bool capturesNatively() const override { return true; }
  Expected<void> beginCapture() override { return device.beginCapture(); }
  Expected<std::shared_ptr<void>> endCapture() override {
    auto graph = device.endCapture();
    if (!graph)
      return std::unexpected(graph.error());
    return std::shared_ptr<void>(*graph, [&device = device](void *g) { device.destroyGraph(g); });
  }
  Expected<void> replay(void *graph) override { return device.launchGraph(graph); }

  Expected<std::shared_ptr<void>> allocateStaging(size_t bytes) override {
    auto p = device.allocatePinned(bytes);
    if (!p)
      return std::unexpected(p.error());
    return std::shared_ptr<void>(*p, [&device = device](void *q) { (void)device.freePinned(q); });
  }

private:
  CudaDevice &device;
};

class CudaTarget final : public Target {
public:
  explicit CudaTarget(std::unique_ptr<CudaDevice> device)
      : device(std::move(device)), fingerprint_("cuda-" + this->device->properties().chip()) {}
  std::string model() const override { return device->properties().name; }
  CudaDevice *cudaDevice() override { return device.get(); }
  const std::string &fingerprint() const override { return fingerprint_; }
  DeviceCapabilities capabilities() const override {
    return DeviceCapabilities::cuda(device->properties().computeMajor,
                                    device->properties().computeMinor);
  }

  CompileOptions withDeviceDefaults(CompileOptions options) const override {
    if (options.ptxas.empty() && !ptxasFailed) {
      options.ptxas = devicePtxas();
      options.ptxasFallsBackToJit = !options.ptxas.empty();
    }
    return options;
  }

  Expected<std::shared_ptr<Program>> compile(Compiler &compiler, ParsedProgram program,
                                             const CompileOptions &options,
                                             CachedProgram &cached) override {
    std::string source = options.ptxasFallsBackToJit ? program.canonicalText() : "";
    auto built = build(compiler, std::move(program), options, cached);
    Expected<std::shared_ptr<Program>> loaded =
        built ? load(cached) : std::unexpected(built.error());
    // ptxas's failures name it; a cubin the driver cannot load is a
    // Compile error of the load (a ptxas newer than the driver, say).
    bool ptxasTrouble = !loaded && !options.ptxas.empty() &&
                        (built ? loaded.error().kind == ErrorKind::Compile
                               : built.error().message.starts_with("ptxas"));
    if (!ptxasTrouble || !options.ptxasFallsBackToJit)
      return loaded;
    if (!ptxasFailed.exchange(true))
      std::fprintf(stderr,
                   "kiln: cuda: KILN_PTXAS=%s does not give kernels this device loads (%s); "
                   "kernels go through the driver's JIT from now on\n",
                   options.ptxas.c_str(), firstLine(loaded.error().message).c_str());
    auto reparsed = compiler.parse(source);
    if (!reparsed)
      return std::unexpected(reparsed.error());
    CompileOptions jit = options;
    jit.ptxas.clear();
    jit.ptxasFallsBackToJit = false;
    cached = {};
    if (auto ok = build(compiler, std::move(*reparsed), jit, cached); !ok)
      return std::unexpected(ok.error());
    return load(cached);
  }

  Expected<std::shared_ptr<Program>> load(const CachedProgram &cached) override {
    auto cuda = CudaProgram::load(*device, cached.plan);
    if (!cuda)
      return std::unexpected(cuda.error());
    return std::make_shared<CudaTargetProgram>(cached.program, std::move(*cuda));
  }

  Expected<std::shared_ptr<DeviceQueue>> makeQueue(std::shared_ptr<Engine> engine) override {
    return std::make_shared<CudaQueue>(std::move(engine), *device);
  }

private:
  /// Compiles `program` into `cached`: its modules cubins, so that no later
  /// load JITs PTX again (a module ptxas assembled is one already).
  Expected<void> build(Compiler &compiler, ParsedProgram program, const CompileOptions &options,
                       CachedProgram &cached) {
    CompileOptions forDevice = options;
    forDevice.chip = device->properties().kernelChip();
    forDevice.multiprocessors = device->properties().multiprocessors;
    auto compiled = compiler.compileForCuda(std::move(program), forDevice);
    if (!compiled)
      return std::unexpected(compiled.error());
    cached.plan = std::move(compiled->plan);
    cached.program = std::move(*compiled);
    auto start = std::chrono::steady_clock::now();
    for (std::string &module : cached.plan.modules)
      if (!module.starts_with("\x7f" "ELF")) {
        auto cubin = device->compileToCubin(module);
        if (!cubin)
          return std::unexpected(cubin.error());
        module = std::move(*cubin);
      }
    cached.program.stageTimes.push_back(
        {"cubin", std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                            start)
                      .count()});
    return {};
  }

  static std::string firstLine(const std::string &text) { return text.substr(0, text.find('\n')); }

  std::unique_ptr<CudaDevice> device;
  std::string fingerprint_;
  /// The device's ptxas failed once: this target's kernels take the JIT.
  std::atomic<bool> ptxasFailed = false;
};

Expected<std::unique_ptr<Target>> openCuda(int index) {
  auto device = CudaDevice::create(index);
  if (!device)
    return std::unexpected(device.error());
  return std::make_unique<CudaTarget>(std::move(*device));
}

Expected<OfflineCompile> compileCudaOffline(Compiler &compiler, std::string_view source,
                                            const CompileOptions &options) {
  auto compiled = compiler.compileForCuda(source, options);
  if (!compiled)
    return std::unexpected(compiled.error());
  std::string artifacts = std::to_string(compiled->plan.modules.size()) +
                          (options.ptxas.empty() ? " PTX" : " cubin") + " module(s), " +
                          std::to_string(compiled->plan.launches.size()) + " launch(es)";
  return OfflineCompile{std::move(*compiled), options.chip, std::move(artifacts)};
}

} // namespace

namespace targets {
extern const TargetKind cuda{DeviceType::Cuda, "cuda", CudaDevice::deviceCount, openCuda,
                             compileCudaOffline};
} // namespace targets

} // namespace kiln
