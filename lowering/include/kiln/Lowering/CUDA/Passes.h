//===- Passes.h - the CUDA target's passes and pipeline ---------*- C++ -*-===//
#ifndef KILN_LOWERING_CUDA_PASSES_H
#define KILN_LOWERING_CUDA_PASSES_H

#include "kiln/Lowering/CUDA/MatmulTunables.h"
#include "kiln/Lowering/Kernels/AttentionFusion.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace kiln {

#define GEN_PASS_DECL
#include "kiln/Lowering/CUDA/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "kiln/Lowering/CUDA/Passes.h.inc"

/// Options of the CUDA pipeline.
struct CudaPipelineOptions {
  std::string chip = "sm_90";
  std::string libdevice; // libdevice.10.bc to link, for f64 math
  /// Tiling of the tensor-core matmul kernel (sm_80 and later); a chip
  /// whose shared memory cannot hold it gets the portable one.
  CudaMmaMatmulTunables mma;
  bool tf32 = false; // f32 matmuls on tensor cores, inputs rounded to tf32
  bool wgmma = true;  // f16/bf16 matmuls on wgmma where the chip is sm_90a
  int64_t multiprocessors = 0; // the device's SMs; 0: the chip's usual count
};

/// The attention kernel formation fuses for `chip`: what the tensor-core
/// kernel takes (sm_80 and later); the rest is faster unfused, its matmuls
/// on the tensor cores, than in the generic fused kernel.
AttentionFusion cudaAttentionFusion(llvm::StringRef chip);

/// Fused kernels -> gpu.modules of NVVM and LLVM ops, and a host function
/// of allocations and gpu.launch_func ops.
void buildKernelsToNvvmPipeline(mlir::OpPassManager &pm,
                                const CudaPipelineOptions &options);
/// gpu.modules -> gpu.binary ops holding PTX (NVPTX in-process).
void buildNvvmToPtxPipeline(mlir::OpPassManager &pm);
/// Registers `kiln-to-nvvm`: kiln -> PTX for sm_90.
void registerKilnCudaPipelines();

} // namespace kiln

#endif
