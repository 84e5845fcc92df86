//===- Engine.h - compile kiln programs and run them on a device -*- C++ -*-===//
#ifndef KILN_BACKEND_ENGINE_H
#define KILN_BACKEND_ENGINE_H

#include "kiln/Lowering/Compiler.h"
#include "kiln/backend/Target.h"
#include "kiln/runtime/common/DiskCache.h"
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
  const std::vector<SizeRule> &sizeRules() const { return compiled.sizeRules; }
  size_t kernelCount() const { return compiled.kernelCount; }
  const std::vector<StageTime> &stageTimes() const { return compiled.stageTimes; }
  /// The tune keys of its tunable kernels (docs/autotune.md).
  const std::vector<std::string> &tuneKeys() const { return compiled.tuneKeys; }
  /// Tune key -> the candidate its kernel took untuned, where that depends
  /// on the shape.
  const std::map<std::string, std::string> &untunedConfigs() const {
    return compiled.untunedConfigs;
  }
  /// Checks `inputs` against the signature (count, dtype, shape; the
  /// shape class where dims are `?`), then runs.
  Expected<std::vector<HostTensor>> run(const std::vector<HostTensor> &inputs) const;
  /// Whether some dim of the signature is a run-time size.
  bool hasDynamicDims() const;
  /// How many dims runUnchecked's `sizes` holds: the signature's ranks.
  size_t dimCount() const { return dimCountOf(compiled); }
  static size_t dimCountOf(const CompiledProgram &compiled);
  /// Runs without checks on host buffers laid out as the signature says
  /// (one pointer per input, then per output) and waits for the results.
  /// `sizes`: every dim of the inputs, then of the outputs; read by CPU
  /// programs with `?` dims only (may be null otherwise).
  virtual Expected<void> runUnchecked(void **buffers, const int64_t *sizes) const = 0;
  /// Bytes of the buffers a launch on device buffers takes after the
  /// outputs (the intermediate buffers between its kernels).
  const std::vector<size_t> &temporaryBytes() const { return temporaries; }

private:
  CompiledProgram compiled;
  std::vector<size_t> temporaries;
};

/// One device's engine: its target, a compiler (created at first use) and
/// the kernel caches (in memory, on disk).
class Engine {
public:
  /// The disk cache is configured from the environment (DiskCacheConfig).
  static Expected<std::unique_ptr<Engine>> create(DeviceId device);
  static Expected<std::unique_ptr<Engine>> create(DeviceId device, DiskCacheConfig disk);
  ~Engine();
  /// The program for `source`, compiled at most once per engine: the cache
  /// key hashes the program text, entry, target fingerprint and kiln version.
  /// On a miss the disk cache is asked, first by the exact text (no MLIR),
  /// then by the canonical IR; what is compiled is stored there. Compiles
  /// that dump or take overrides (docs/dumps.md) never load from disk and
  /// are kept in memory under keys of their own; a program with overridden
  /// stages never enters the disk cache.
  /// Unless `options.tuned` is set, the tune files' configs apply
  /// (Autotuner); a tuned program that does not compile falls back to the
  /// defaults.
  Expected<std::shared_ptr<Program>> compile(std::string_view source,
                                             const CompileOptions &options = {});
  /// How many programs this engine has compiled (misses of both caches).
  size_t compileCount() const { return compiles; }
  /// How many program texts it has parsed (once per text the cache has not
  /// seen: the canonical key and the compile share the parse).
  size_t parseCount() const;
  size_t cacheHits() const { return hits; }
  /// compile() with `options` as they are (but for the device's defaults,
  /// Target::withDeviceDefaults): no tune table added (the tuner's view of
  /// a kernel untuned).
  Expected<std::shared_ptr<Program>> compileAsGiven(std::string_view source,
                                                    const CompileOptions &options);
  /// Programs loaded from the disk cache.
  size_t diskCacheHits() const { return diskHits; }
  /// MLIR contexts engines of this process have created: one per engine
  /// that compiled or canonicalised anything (its Compiler owns one).
  static size_t mlirContextsCreated();
  const DeviceId &device() const { return deviceId; }
  Target &target() const { return *target_; }
  /// What this engine's device can do with each element type.
  DeviceCapabilities capabilities() const { return target_->capabilities(); }

private:
  Engine(DeviceId id, std::unique_ptr<Target> target, DiskCacheConfig disk);
  /// The compiler, loaded (kiln/backend/CompilerLibrary.h) and created
  /// with its MLIR context at first use.
  Expected<Compiler *> compiler();
  /// The program stored on disk under `base` (Engine::compileAsGiven's
  /// key of its text or IR) compiled with `options`' tuned configs; null
  /// when there is none, or it cannot be decoded or loaded (reported once,
  /// then rebuilt).
  std::shared_ptr<Program> loadFromDisk(const CacheKey &base, const CompileOptions &options);
  DeviceId deviceId;
  std::unique_ptr<Target> target_;
  std::unique_ptr<Compiler> compilerInstance;
  DiskCache disk;
  std::mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<Program>> cache;
  size_t compiles = 0, hits = 0, diskHits = 0;
};

} // namespace kiln

#endif
