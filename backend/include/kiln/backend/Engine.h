//===- Engine.h - compile kiln programs and run them on a device -*- C++ -*-===//
#ifndef KILN_BACKEND_ENGINE_H
#define KILN_BACKEND_ENGINE_H

#include "kiln/Lowering/Compiler.h"
#include "kiln/backend/Capabilities.h"
#include "kiln/runtime/common/HostTensor.h"
#include "kiln/runtime/cpu/CpuDevice.h"
#include "kiln/runtime/cuda/CudaProgram.h"
#include "kiln/runtime/vulkan/VulkanProgram.h"

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace kiln {

enum class DeviceType { Cpu, Cuda, Vulkan };

struct DeviceId {
  DeviceType type = DeviceType::Cpu;
  int index = 0;
  /// Parses "cpu", "cuda", "cuda:1", "vulkan:0".
  static Expected<DeviceId> parse(std::string_view text);
  std::string toString() const;
  bool operator==(const DeviceId &) const = default;
};

/// A compiled program, ready to run on its device.
class Program {
public:
  /// Runs on one host pointer per input, then per output.
  using Runner = std::function<Expected<void>(void **)>;
  /// Queues the program on buffers in the device's memory (one address per
  /// input, then per output); may return before the work is done.
  using Launcher = std::function<Expected<void>(const std::vector<uint64_t> &)>;
  /// Without a launcher, device memory is host memory: launches run now.
  /// A launcher takes, after the outputs, one buffer of each of
  /// `temporaries` bytes (the intermediate buffers between its kernels).
  Program(CompiledProgram compiled, Runner runner, Launcher launcher = {},
          std::vector<size_t> temporaries = {})
      : compiled(std::move(compiled)), runner(std::move(runner)),
        launcher(std::move(launcher)), temporaries(std::move(temporaries)) {}
  /// A Vulkan program, which runs on buffers a VulkanExecutor binds.
  Program(CompiledProgram compiled, std::shared_ptr<VulkanProgram> vulkan);
  const std::vector<TensorSignature> &inputs() const { return compiled.inputs; }
  const std::vector<TensorSignature> &outputs() const { return compiled.outputs; }
  size_t kernelCount() const { return compiled.kernelCount; }
  const std::vector<StageTime> &stageTimes() const { return compiled.stageTimes; }
  /// Checks `inputs` against the signature (count, dtype, shape), then runs.
  Expected<std::vector<HostTensor>> run(const std::vector<HostTensor> &inputs) const;
  /// Runs without checks on buffers already laid out as the signature says.
  Expected<void> runUnchecked(void **buffers) const { return runner(buffers); }
  /// Queues a run on device buffers laid out as the signature says, then
  /// the temporaries.
  Expected<void> launch(const std::vector<uint64_t> &deviceBuffers) const;
  const std::vector<size_t> &temporaryBytes() const { return temporaries; }
  /// The Vulkan program (null on other devices).
  VulkanProgram *vulkanProgram() const { return vulkan.get(); }

private:
  CompiledProgram compiled;
  Runner runner;
  Launcher launcher;
  std::vector<size_t> temporaries;
  std::shared_ptr<VulkanProgram> vulkan;
};

/// What SPIR-V for a Vulkan device may use: its features and limits.
VulkanTarget vulkanTargetOf(const VulkanDeviceProperties &device);

/// One device's engine: compiler, in-memory kernel cache, device.
class Engine {
public:
  static Expected<std::unique_ptr<Engine>> create(DeviceId device);
  /// The program for `source`, compiled at most once per engine: the cache
  /// key hashes the program text, entry, target fingerprint and kiln version.
  Expected<std::shared_ptr<Program>> compile(std::string_view source,
                                             const CompileOptions &options = {});
  /// How many programs this engine has compiled (cache misses).
  size_t compileCount() const { return compiles; }
  /// How many program texts it has parsed (once per text the cache has not
  /// seen: the canonical key and the compile share the parse).
  size_t parseCount() const { return compiler.parseCount(); }
  size_t cacheHits() const { return hits; }
  const DeviceId &device() const { return deviceId; }
  /// What this engine's device can do with each element type.
  DeviceCapabilities capabilities() const;
  /// The device itself (null for the other kinds).
  CpuDevice *cpuDevice() const { return cpu.get(); }
  CudaDevice *cudaDevice() const { return cuda.get(); }
  VulkanDevice *vulkanDevice() const { return vulkan.get(); }

private:
  explicit Engine(DeviceId id) : deviceId(id) {}
  Expected<std::shared_ptr<Program>> build(ParsedProgram program,
                                           const CompileOptions &options);
  DeviceId deviceId;
  std::unique_ptr<CpuDevice> cpu;   // for cpu:0
  std::unique_ptr<CudaDevice> cuda; // for cuda:N
  std::unique_ptr<VulkanDevice> vulkan; // for vulkan:N
  Compiler compiler;
  std::mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<Program>> cache;
  size_t compiles = 0, hits = 0;
};

} // namespace kiln

#endif
