//===- Engine.h - compile kiln programs and run them on a device -*- C++ -*-===//
#ifndef KILN_BACKEND_ENGINE_H
#define KILN_BACKEND_ENGINE_H

#include "kiln/Lowering/Compiler.h"
#include "kiln/backend/Capabilities.h"
#include "kiln/runtime/common/DiskCache.h"
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

struct CachedProgram;

/// One device's engine: compiler, kernel caches (in memory, on disk), device.
class Engine {
public:
  /// The disk cache is configured from the environment (DiskCacheConfig).
  static Expected<std::unique_ptr<Engine>> create(DeviceId device);
  static Expected<std::unique_ptr<Engine>> create(DeviceId device, DiskCacheConfig disk);
  ~Engine();
  /// The program for `source`, compiled at most once per engine: the cache
  /// key hashes the program text, entry, target fingerprint and kiln version.
  /// On a miss the disk cache is asked, first by the exact text (no MLIR),
  /// then by the canonical IR; what is compiled is stored there.
  Expected<std::shared_ptr<Program>> compile(std::string_view source,
                                             const CompileOptions &options = {});
  /// How many programs this engine has compiled (misses of both caches).
  size_t compileCount() const { return compiles; }
  size_t cacheHits() const { return hits; }
  /// Programs loaded from the disk cache.
  size_t diskCacheHits() const { return diskHits; }
  /// MLIR contexts engines of this process have created: one per engine
  /// that compiled or canonicalised anything (its Compiler owns one).
  static size_t mlirContextsCreated();
  const DeviceId &device() const { return deviceId; }
  /// What this engine's device can do with each element type.
  DeviceCapabilities capabilities() const;
  /// The device itself (null for the other kinds).
  CpuDevice *cpuDevice() const { return cpu.get(); }
  CudaDevice *cudaDevice() const { return cuda.get(); }
  VulkanDevice *vulkanDevice() const { return vulkan.get(); }

private:
  Engine(DeviceId id, DiskCacheConfig disk);
  /// The compiler, created (with its MLIR context) at first use.
  Compiler &compiler();
  /// "cpu", "cuda" or "vulkan": the kind of binary this engine loads.
  const char *binaryKind() const;
  std::string targetFingerprint() const;
  /// Compiles `source` for the device into `cached`, then loads it.
  Expected<std::shared_ptr<Program>> build(std::string_view source,
                                           const CompileOptions &options,
                                           CachedProgram &cached);
  Expected<std::shared_ptr<Program>> load(const CachedProgram &cached);
  /// The program stored on disk under `key`; null when there is none, or
  /// it cannot be decoded or loaded (reported once, then rebuilt).
  std::shared_ptr<Program> loadFromDisk(const CacheKey &key);
  DeviceId deviceId;
  std::unique_ptr<CpuDevice> cpu;   // for cpu:0
  std::unique_ptr<CudaDevice> cuda; // for cuda:N
  std::unique_ptr<VulkanDevice> vulkan; // for vulkan:N
  std::unique_ptr<Compiler> compilerInstance;
  DiskCache disk;
  std::mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<Program>> cache;
  size_t compiles = 0, hits = 0, diskHits = 0;
};

} // namespace kiln

#endif
