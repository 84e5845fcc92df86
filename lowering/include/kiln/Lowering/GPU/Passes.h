//===- Passes.h - passes and pipelines both GPU targets run -----*- C++ -*-===//
#ifndef KILN_LOWERING_GPU_PASSES_H
#define KILN_LOWERING_GPU_PASSES_H

#include "kiln/Lowering/GPU/KernelTunables.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace kiln {

#define GEN_PASS_DECL
#include "kiln/Lowering/GPU/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "kiln/Lowering/GPU/Passes.h.inc"

/// Fused kernels on tensors -> a host function on buffers, with tensor
/// constants computed on the device.
void buildGpuBufferizationPipeline(mlir::OpPassManager &pm);
/// What a target's outlining pipeline is told about the device.
struct GpuOutliningOptions {
  /// The most blocks per grid dim (empty: CUDA's).
  llvm::SmallVector<int64_t> maxGrid;
  /// kiln-gpu-row-reductions' option of that name.
  bool hoistRowValues = false;
  /// kiln-gpu-kernel-sizes' flat-size (CUDA's bare pointers need a static
  /// length).
  int64_t flatBufferSize = 0;
  /// kiln-gpu-scatter-adds' atomic-types.
  llvm::SmallVector<std::string> atomicAddTypes;
  /// kiln-vectorize's and kiln-gpu-row-reductions' run-time-sizes: CUDA
  /// reads flat buffers of run-time size by vectors; SPIR-V's runtime
  /// arrays of scalars cannot be retyped.
  bool vectorizeRunTimeSizes = false;
  /// kiln-attention-to-loops' max-thread-iterations (0: none).
  int64_t maxThreadIterations = 0;
};

/// Bufferized kernels -> gpu.launch_func on the host and outlined kernels in
/// gpu.modules.
void buildGpuKernelOutliningPipeline(mlir::OpPassManager &pm, const GpuOutliningOptions &options);

} // namespace kiln

#endif
