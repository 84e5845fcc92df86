//===- CudaCompile.cpp - the CUDA target's compile driver ----------------===//
//
// Fused kernels -> PTX through NVPTX in-process (gpu-module-to-binary), and
// optionally a cubin from the CUDA toolkit's ptxas, run as a subprocess.
//
//===----------------------------------------------------------------------===//
#include "CompilerInternals.h"
#include "kiln/Lowering/CUDA/Passes.h"
#include "kiln/runtime/cuda/CudaToolkit.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Program.h"
#include "llvm-c/Target.h"

#include <fstream>

using namespace mlir;

namespace kiln {

namespace {
/// NVPTX, which gpu-module-to-binary looks up, registered once per process.
void initializeNvptx() {
  static const bool initialized = [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
    return true;
  }();
  (void)initialized;
}

/// Whether NVPTX knows `chip` ("sm_90a"): an unknown one (a typo, "sm_5")
/// lowered with LLVM's warnings and failed as NVVM's "Minimum NVVM target
/// SM version is sm_20", an internal-looking error for a user's mistake.
bool isKnownChip(llvm::StringRef chip) {
  llvm::Triple triple("nvptx64-nvidia-cuda");
  std::string error;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return false;
  std::unique_ptr<llvm::MCSubtargetInfo> generic(target->createMCSubtargetInfo(triple, "", ""));
  return generic && generic->isCPUStringValid(chip);
}

/// `ptx` assembled by ptxas for `chip`; a failure carries ptxas's output
/// and the command line that reproduces it.
Expected<std::string> assembleCubin(const std::string &ptxas, const std::string &chip,
                                    const std::string &ptx) {
  auto program = llvm::sys::findProgramByName(ptxas);
  if (!program)
    return makeError(ErrorKind::InvalidArgument, "ptxas '" + ptxas + "' not found");
  llvm::SmallString<64> in, out, log;
  for (auto [path, suffix] : {std::pair{&in, "ptx"}, {&out, "cubin"}, {&log, "log"}})
    if (llvm::sys::fs::createTemporaryFile("kiln", suffix, *path))
      return makeError(ErrorKind::Compile, "ptxas: cannot create a temporary file");
  bool failed = false; // then the input stays, for the repro line
  auto cleanup = llvm::scope_exit([&] {
    for (auto *path : {&in, &out, &log})
      if (!failed || path != &in)
        llvm::sys::fs::remove(*path);
  });
  std::ofstream(in.str().str(), std::ios::binary) << ptx;
  llvm::SmallVector<llvm::StringRef> args = {*program, "--gpu-name", chip, "-O3",
                                            "-o", out, in};
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, log.str(), log.str()};
  int rc = llvm::sys::ExecuteAndWait(*program, args, std::nullopt, redirects);
  auto slurp = [](llvm::StringRef path) {
    std::ifstream f(path.str(), std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  failed = rc != 0;
  if (failed)
    return makeError(ErrorKind::Compile,
                     "ptxas failed (exit " + std::to_string(rc) + "):\n" +
                         slurp(log) + "repro: " + llvm::join(args, " "));
  return slurp(out);
}
} // namespace

Expected<CompiledGpuProgram> MlirCompiler::compileForCuda(ParsedProgram program,
                                                      const CompileOptions &options) {
  initializeNvptx();
  if (!isKnownChip(options.chip))
    return makeError(ErrorKind::InvalidArgument,
                     "unknown CUDA chip '" + options.chip +
                         "' (expected one NVPTX knows, sm_NN or sm_NNa: sm_80, sm_90a, ...)");
  CompiledGpuProgram result;
  CompileSession session(context, options, result, program, "cuda", options.chip);
  auto module = session.formKernels(0, cudaAttentionFusion(options.chip));
  if (!module)
    return std::unexpected(module.error());
  CudaPipelineOptions pipeline;
  pipeline.chip = options.chip;
  // libdevice for f64 math in kernels, where the CUDA toolkit has it.
  pipeline.libdevice = cudaToolkitFile("nvvm/libdevice/libdevice.10.bc");
  pipeline.mma = options.mma;
  pipeline.tf32 = options.tf32;
  pipeline.wgmma = options.wgmma;
  pipeline.multiprocessors = options.multiprocessors;
  if (auto ok = session.lower(
          *module, "nvvm", [&](OpPassManager &pm) { buildKernelsToNvvmPipeline(pm, pipeline); },
          "lowering to NVVM failed", "2-gpu.mlir");
      !ok)
    return std::unexpected(ok.error());
  if (auto ok = session.lower(
          *module, "ptx", buildNvvmToPtxPipeline, "lowering to PTX failed", "");
      !ok)
    return std::unexpected(ok.error());
  llvm::StringMap<std::string> ptx;
  for (auto binary : module->getOps<gpu::BinaryOp>())
    ptx[binary.getSymName()] =
        cast<gpu::ObjectAttr>(binary.getObjects()[0]).getObject().str();
  if (auto ok = attachGpuPlan(session, *module, ptx, /*indexBytes=*/8, result); !ok)
    return std::unexpected(ok.error());
  std::vector<std::string> &modules = result.plan.modules;
  for (size_t i = 0; i < modules.size(); ++i)
    session.stageBinary("3-kernel" + std::to_string(i) + ".ptx", modules[i]);
  if (!options.ptxas.empty()) {
    auto timer = session.time("ptxas");
    for (size_t i = 0; i < modules.size(); ++i) {
      auto cubin = assembleCubin(options.ptxas, options.chip, modules[i]);
      if (!cubin)
        return std::unexpected(cubin.error());
      modules[i] = std::move(*cubin);
      session.stageBinary("4-kernel" + std::to_string(i) + ".cubin", modules[i]);
    }
  }
  return session.finish(result);
}

} // namespace kiln
