//===- CpuDevice.h - running native kernels on the host ---------*- C++ -*-===//
//
// Loads object code produced by the CPU lowering into LLVM's ORC JIT and
// runs it. The JIT lives in libkiln-cpu-jit.so (runtime/cpu/CpuJit.h), which
// the first CPU device loads: a process that uses only GPUs loads no LLVM,
// and one that replays cached kernels no MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CPU_CPUDEVICE_H
#define KILN_RUNTIME_CPU_CPUDEVICE_H

#include "kiln/runtime/common/Error.h"

#include <memory>
#include <string>
#include <string_view>

namespace kiln {

/// A loaded CPU program: `void _kiln_entry(void **buffers)`.
class CpuExecutable {
public:
  using EntryFn = void (*)(void **);
  explicit CpuExecutable(EntryFn entry) : entry(entry) {}
  /// Runs the program on one data pointer per argument (inputs, then outputs).
  void run(void **buffers) const { entry(buffers); }

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

  /// Loads a relocatable object file; each distinct one gets its own symbol
  /// namespace, once per process.
  Expected<std::shared_ptr<CpuExecutable>> load(std::string_view object);
  /// What code for this device depends on: "cpu-<triple>-<cpu>+<hash of
  /// the host's features>", the same as the CPU compiler's.
  const std::string &fingerprint() const { return fingerprint_; }
  /// Distinct objects the process's JIT holds.
  static size_t loadedObjectCount();

private:
  explicit CpuDevice(std::string fingerprint) : fingerprint_(std::move(fingerprint)) {}
  std::string fingerprint_;
};

} // namespace kiln

#endif
