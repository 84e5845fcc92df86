//===- CompilerInternals.h - what the target compile drivers share -*- C++ -*-===//
//
// The shared half of Compiler: its MLIR context, parsed programs, and the
// CompileSession every target's driver (CPU/CpuCompile.cpp,
// CUDA/CudaCompile.cpp, SPIRV/SpirvCompile.cpp) runs its stages in.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LOWERING_COMPILERINTERNALS_H
#define KILN_LOWERING_COMPILERINTERNALS_H

#include "kiln/Lowering/Compiler.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Target/TargetMachine.h"

#include <chrono>
#include <functional>
#include <optional>

namespace kiln {

/// A parsed program's module.
struct MlirModule : ParsedProgram::Module {
  mlir::OwningOpRef<mlir::ModuleOp> op;
};

/// The host CPU code is generated for (CPU/CpuCompile.cpp).
struct HostCpu {
  std::unique_ptr<llvm::TargetMachine> targetMachine; // null: no code generator
  int64_t f32Lanes = 4; // of the widest vector registers the host has
  static HostCpu detect();
};

/// The Compiler the compiler library creates: Compiler.cpp has what every
/// target shares, each target's driver its compileFor... .
class MlirCompiler final : public Compiler {
public:
  MlirCompiler();
  Expected<ParsedProgram> parse(std::string_view source) override;
  Expected<CompiledCpuProgram> compileForCpu(ParsedProgram program,
                                             const CompileOptions &options) override;
  Expected<CompiledGpuProgram> compileForCuda(ParsedProgram program,
                                              const CompileOptions &options) override;
  Expected<CompiledGpuProgram> compileForVulkan(ParsedProgram program,
                                                const CompileOptions &options) override;
  size_t parseCount() const override { return parses; }

private:
  /// Detected on first use: only CPU compiles need it.
  const HostCpu &host() {
    if (!hostCpu)
      hostCpu = HostCpu::detect();
    return *hostCpu;
  }
  mlir::MLIRContext context;
  size_t parses = 0;
  std::optional<HostCpu> hostCpu;
};

/// One compile of one parsed program: collects error diagnostics, times
/// stages into the result and writes dumps (CompileOptions::dumpDir).
class CompileSession {
public:
  CompileSession(mlir::MLIRContext &context, const CompileOptions &options,
                 CompiledProgram &result);

  /// The prologue every target shares: kiln-verify-program, the entry
  /// function's signature, kernel formation (fused chains split to at most
  /// `maxKernelBuffers` buffers; 0: no limit). Dumps 0-kiln.mlir and
  /// 1-kernels.mlir.
  Expected<mlir::ModuleOp> formKernels(ParsedProgram &program,
                                       unsigned maxKernelBuffers = 0);
  /// Runs the pipeline `build` adds on `module` as stage `stage`; a failure
  /// is `failure` with the diagnostics. Dumps the result as `dumpName`.
  Expected<void> lower(mlir::ModuleOp module, const char *stage,
                       const std::function<void(mlir::OpPassManager &)> &build,
                       const std::string &failure, const std::string &dumpName);

  /// An error for a failed stage: Unsupported when a rule says so.
  std::unexpected<Error> fail(const std::string &what) const;
  /// Writes `text` to the dump directory as `name`, when dumping.
  void dump(const std::string &name, std::string_view text) const;
  void dump(const std::string &name, mlir::Operation *op) const;

  /// Times a stage into the result while it lives.
  struct Timer {
    CompiledProgram &result;
    const char *stage;
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    ~Timer();
  };
  Timer time(const char *stage) { return Timer{result, stage}; }

  const CompileOptions &options;
  CompiledProgram &result;

private:
  mlir::MLIRContext &context;
  std::string diagnostics;
  mlir::ScopedDiagnosticHandler handler;
};

/// Reads the launch plan of a GPU program off its lowered host function,
/// with `binaries` (kernel module name -> PTX, cubin or SPIR-V) as its
/// modules, and dumps them as 3-kernelN`extension` (GPU/GpuCompile.cpp).
Expected<void> attachGpuPlan(CompileSession &session, mlir::ModuleOp module,
                             const llvm::StringMap<std::string> &binaries,
                             llvm::StringRef extension, CompiledGpuProgram &result);

} // namespace kiln

#endif
