//===- CompilerInternals.h - what the target compile drivers share -*- C++ -*-===//
//
// The shared half of Compiler: its MLIR context, parsed programs, and the
// CompileSession every target's driver (CPU/CpuCompile.cpp,
// CUDA/CudaCompile.cpp, SPIRV/SpirvCompile.cpp) runs its stages in.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LOWERING_COMPILERINTERNALS_H
#define KILN_LOWERING_COMPILERINTERNALS_H

#include "Dumps.h"
#include "kiln/Lowering/Compiler.h"
#include "kiln/Lowering/Kernels/AttentionFusion.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Target/TargetMachine.h"

#include <chrono>
#include <functional>
#include <optional>
#include <type_traits>

namespace kiln {

/// A parsed program's module.
struct MlirModule : ParsedProgram::Module {
  mlir::OwningOpRef<mlir::ModuleOp> op;
};

/// The host CPU code is generated for (CPU/CpuCompile.cpp).
struct HostCpu {
  std::unique_ptr<llvm::TargetMachine> targetMachine; // null: no code generator
  int64_t f32Lanes = 4; // of the widest vector registers the host has
  // bf16 products as vdpbf16ps dot products of pairs (AVX512-BF16), where
  // they beat widening to f32: AMD's Zen 4 and 5 (CpuCompile.cpp).
  bool bf16DotProducts = false;
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
/// stages into the result, and dumps and overrides its stages
/// (CompileOptions::dumpDir, overrideDir; Dumps.h). A driver ends a compile
/// that succeeds with finish(); one that ends without it failed.
class CompileSession {
public:
  /// `target` ("cpu", "cuda", "vulkan") and `detail` (what else its code
  /// depends on) key the compile's stage folder.
  CompileSession(mlir::MLIRContext &context, const CompileOptions &options,
                 CompiledProgram &result, ParsedProgram &program, std::string target,
                 std::string detail);
  ~CompileSession();

  /// The prologue every target shares: kiln-verify-program, the entry
  /// function's signature, kernel formation (fused chains split to at most
  /// `maxKernelBuffers` buffers; 0: no limit), the attention ops
  /// `attention` names fused. Stages 0-kiln.mlir and 1-kernels.mlir.
  Expected<mlir::ModuleOp> formKernels(unsigned maxKernelBuffers = 0,
                                       AttentionFusion attention = AttentionFusion::all);
  /// Runs the pipeline `build` adds on `module` as stage `stage`; a failure
  /// is `failure` with the diagnostics. The result is stage file
  /// `stageFile` (none when empty): see stageModule.
  Expected<void> lower(mlir::ModuleOp &module, const char *stage,
                       const std::function<void(mlir::OpPassManager &)> &build,
                       const std::string &failure, const std::string &stageFile);
  /// Stage file `file` of `module`: dumped, and replaced by its override,
  /// parsed, where there is one (an override must keep the entry's
  /// signature).
  Expected<void> stageModule(const std::string &file, mlir::ModuleOp &module);
  /// Stage file `file` of `bytes` (an object, PTX, a cubin, SPIR-V):
  /// dumped, and replaced by its override where there is one.
  void stageBinary(const std::string &file, std::string &bytes);

  /// An error for a failed stage: Unsupported when a rule says so.
  std::unexpected<Error> fail(const std::string &what) const;

  /// Times a stage into the result while it lives.
  struct Timer {
    CompiledProgram &result;
    const char *stage;
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    ~Timer();
  };
  Timer time(const char *stage) { return Timer{result, stage}; }

  /// The end of a compile that succeeded: logs its overrides and records it
  /// in the manifest (a GPU program with its launches).
  template <typename Compiled> Expected<Compiled> finish(Compiled &compiled) {
    const GpuPlan *plan = nullptr;
    if constexpr (std::is_same_v<Compiled, CompiledGpuProgram>)
      plan = &compiled.plan;
    compiled.overridden = dumps.overridden();
    finished = true;
    dumps.finish(true, compiled, plan, kernels);
    return std::move(compiled);
  }

  const CompileOptions &options;
  CompiledProgram &result;
  CompileDumps dumps;

private:
  mlir::MLIRContext &context;
  ParsedProgram &program;
  std::string diagnostics;
  mlir::ScopedDiagnosticHandler handler;
  std::vector<std::string> kernels;
  /// The entry's signature as its types declare it (`?` dims unnamed),
  /// which overrides must keep.
  std::vector<TensorSignature> declaredInputs, declaredOutputs;
  /// Modules parsed from overrides, alive until the compile ends.
  std::vector<mlir::OwningOpRef<mlir::ModuleOp>> replacements;
  bool finished = false;
};

/// Reads the launch plan of a GPU program off its lowered host function,
/// with `binaries` (kernel module name -> PTX or SPIR-V) as its modules
/// and kernels' index scalars `indexBytes` wide (GPU/GpuCompile.cpp).
Expected<void> attachGpuPlan(CompileSession &session, mlir::ModuleOp module,
                             const llvm::StringMap<std::string> &binaries,
                             unsigned indexBytes, CompiledGpuProgram &result);

} // namespace kiln

#endif
