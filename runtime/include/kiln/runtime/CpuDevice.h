//===- CpuDevice.h - running native kernels on the host ---------*- C++ -*-===//
//
// Loads object code produced by the CPU lowering into an ORC JIT and runs
// it. Needs LLVM's JIT, not MLIR: a process that only replays cached kernels
// never initialises MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CPUDEVICE_H
#define KILN_RUNTIME_CPUDEVICE_H

#include "kiln/runtime/Error.h"

#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace llvm::orc {
class LLJIT;
}

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

/// The host CPU as a kiln device.
class CpuDevice {
public:
  static Expected<std::unique_ptr<CpuDevice>> create();
  ~CpuDevice();

  /// Loads a relocatable object file; each gets its own symbol namespace.
  Expected<std::shared_ptr<CpuExecutable>> load(std::string_view object);
  /// The fingerprint of the code this device runs: "cpu-<triple>-<cpu>".
  const std::string &fingerprint() const { return fingerprint_; }

private:
  CpuDevice(std::unique_ptr<llvm::orc::LLJIT> jit, std::string fingerprint);
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::string fingerprint_;
  std::mutex mutex;
  unsigned nextLibrary = 0;
};

} // namespace kiln

#endif
