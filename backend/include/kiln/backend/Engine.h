//===- Engine.h - compile kiln programs and run them on a device -*- C++ -*-===//
#ifndef KILN_BACKEND_ENGINE_H
#define KILN_BACKEND_ENGINE_H

#include "kiln/Lowering/Compiler.h"
#include "kiln/backend/Target.h"
#include "kiln/runtime/common/HostTensor.h"

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace kiln {

struct DeviceId {
  DeviceType type = DeviceType::Cpu;
  int index = 0;
  /// Parses "cpu", "cuda", "cuda:1", "vulkan:0" (the registry's kind names).
  static Expected<DeviceId> parse(std::string_view text);
  std::string toString() const;
  bool operator==(const DeviceId &) const = default;
};

/// A compiled program loaded on its device; each target subclasses it.
/// Launches on device buffers go through the device's queue, which knows
/// its target's programs.
class Program {
public:
  explicit Program(CompiledProgram compiled, std::vector<size_t> temporaries = {})
      : compiled(std::move(compiled)), temporaries(std::move(temporaries)) {}
  virtual ~Program() = default;
  const std::vector<TensorSignature> &inputs() const { return compiled.inputs; }
  const std::vector<TensorSignature> &outputs() const { return compiled.outputs; }
  size_t kernelCount() const { return compiled.kernelCount; }
  const std::vector<StageTime> &stageTimes() const { return compiled.stageTimes; }
  /// Checks `inputs` against the signature (count, dtype, shape), then runs.
  Expected<std::vector<HostTensor>> run(const std::vector<HostTensor> &inputs) const;
  /// Runs without checks on host buffers laid out as the signature says
  /// (one pointer per input, then per output) and waits for the results.
  virtual Expected<void> runUnchecked(void **buffers) const = 0;
  /// Bytes of the buffers a launch on device buffers takes after the
  /// outputs (the intermediate buffers between its kernels).
  const std::vector<size_t> &temporaryBytes() const { return temporaries; }

private:
  CompiledProgram compiled;
  std::vector<size_t> temporaries;
};

/// One device's engine: its target, a compiler, and the in-memory kernel
/// cache.
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
  Target &target() const { return *target_; }
  /// What this engine's device can do with each element type.
  DeviceCapabilities capabilities() const { return target_->capabilities(); }

private:
  Engine(DeviceId id, std::unique_ptr<Target> target)
      : deviceId(id), target_(std::move(target)) {}
  DeviceId deviceId;
  std::unique_ptr<Target> target_;
  Compiler compiler;
  std::mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<Program>> cache;
  size_t compiles = 0, hits = 0;
};

} // namespace kiln

#endif
