//===- Passes.h - the CPU target's passes and pipeline ----------*- C++ -*-===//
#ifndef KILN_LOWERING_CPU_PASSES_H
#define KILN_LOWERING_CPU_PASSES_H

#include "kiln/Lowering/Common/Passes.h"
#include "kiln/Lowering/Common/VectorizeTunables.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace kiln {

/// Iterations per task of a parallel loop with cheap iterations (an
/// elementwise kernel's vectors): kiln-cpu-async-parallel-for's default.
inline constexpr int64_t kCheapIterationsPerTask = 1024;

#define GEN_PASS_DECL
#include "kiln/Lowering/CPU/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "kiln/Lowering/CPU/Passes.h.inc"

/// Options of the CPU pipeline.
struct CpuPipelineOptions {
  std::string entry = "main";
  unsigned numThreads = 0; // 0: the machine's hardware threads
  int64_t vectorWidth = VectorizeTunables{}.cpuLanes; // f32 lanes of the host
  bool bf16DotProducts = false; // bf16 products as vdpbf16ps pairs (HostCpu)
};

/// Fused kernels -> LLVM dialect for the host CPU.
void buildKernelsToCpuLLVMPipeline(mlir::OpPassManager &pm,
                                   const CpuPipelineOptions &options);
/// Registers `kiln-to-cpu-llvm`: kiln -> LLVM dialect for the host CPU.
void registerKilnCpuPipelines();

} // namespace kiln

#endif
