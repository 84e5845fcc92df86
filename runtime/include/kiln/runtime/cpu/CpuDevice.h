//===- CpuDevice.h - running native kernels on the host ---------*- C++ -*-===//
//
// Runs native CPU kernels: shared objects (linked when they were compiled,
// runtime/cpu/SharedKernel.h), loaded with dlopen and no LLVM, or
// relocatable objects, loaded into LLVM's ORC JIT. The JIT lives in
// libkiln-cpu-jit.so (runtime/cpu/CpuJit.h), loaded on first need: a
// process that uses only GPUs, or replays cached shared kernels, loads no
// LLVM, and one that replays cached kernels no MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CPU_CPUDEVICE_H
#define KILN_RUNTIME_CPU_CPUDEVICE_H

#include "kiln/runtime/common/Error.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace kiln {

/// A loaded CPU program: `void _kiln_entry(void **buffers, const int64_t *sizes)`
/// (sizes: every dim of every buffer, read where the program has `?` dims).
class CpuExecutable {
public:
  using EntryFn = void (*)(void **, const int64_t *);
  explicit CpuExecutable(EntryFn entry) : entry(entry) {}
  /// Runs the program on one data pointer per argument (inputs, then outputs).
  void run(void **buffers, const int64_t *sizes) const { entry(buffers, sizes); }

private:
  EntryFn entry;
};

/// The host CPU as a kiln device. Every CpuDevice loads into one JIT of
/// the process, which is never freed (see CpuDevice.cpp), and an object
/// loaded once is shared: a process that creates and destroys devices over
/// and over holds one JIT and one copy of each distinct program.
class CpuDevice {
public:
  static Expected<std::unique_ptr<CpuDevice>> create();

  /// Loads a kernel binary, a shared object or a relocatable object; each
  /// distinct one gets its own symbol namespace, once per process.
  Expected<std::shared_ptr<CpuExecutable>> load(std::string_view binary);
  /// What code for this device depends on: "cpu-<triple>-<cpu>+<hash of
  /// the host's features>", the same as the CPU compiler's.
  const std::string &fingerprint() const { return fingerprint_; }
  /// Distinct kernel binaries the process holds.
  static size_t loadedObjectCount();
  /// Whether libkiln-cpu-jit.so (and with it LLVM) was loaded.
  static bool jitLibraryLoaded();

private:
  explicit CpuDevice(std::string fingerprint) : fingerprint_(std::move(fingerprint)) {}
  std::string fingerprint_;
};

} // namespace kiln

#endif
