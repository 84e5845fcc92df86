//===- CpuCompiler.h - kiln programs -> native object code ------*- C++ -*-===//
#ifndef KILN_LOWERING_CPUCOMPILER_H
#define KILN_LOWERING_CPUCOMPILER_H

#include "kiln/runtime/Error.h"
#include "kiln/runtime/HostTensor.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

struct TensorSignature {
  DType dtype;
  std::vector<int64_t> shape;
};

struct StageTime {
  std::string stage;
  double milliseconds;
};

/// A program compiled for the host CPU: a relocatable object with
/// `_kiln_entry`, and what it takes and returns.
struct CompiledCpuProgram {
  std::string object;
  std::vector<TensorSignature> inputs, outputs;
  size_t kernelCount = 0;
  std::vector<StageTime> stageTimes;
};

struct CpuCompileOptions {
  std::string entry = "main";
  std::string dumpDir;     // when set, every stage is written there
  unsigned numThreads = 0; // 0: the machine's hardware threads
};

/// Compiles kiln programs. Owns one MLIR context, reused across compiles.
class CpuCompiler {
public:
  CpuCompiler();
  ~CpuCompiler();
  /// Parses, verifies, lowers and code-generates `source` for the host.
  /// Bad programs give InvalidArgument with the parser's or verifier's
  /// message; what the CPU cannot run yet gives Unsupported.
  Expected<CompiledCpuProgram> compile(std::string_view source,
                                       const CpuCompileOptions &options);
  /// The program in canonical form (generic op syntax, no locations), so
  /// that reformatted text of one program has one cache key.
  Expected<std::string> canonicalForm(std::string_view source);
  /// "cpu-<triple>-<cpu>+<features>": what generated code depends on.
  std::string targetFingerprint() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace kiln

#endif
