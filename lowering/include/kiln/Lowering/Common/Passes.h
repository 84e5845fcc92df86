//===- Passes.h - kiln lowering passes and pipelines ------------*- C++ -*-===//
#ifndef KILN_LOWERING_PASSES_H
#define KILN_LOWERING_PASSES_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace kiln {

#define GEN_PASS_DECL
#include "kiln/Lowering/Common/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "kiln/Lowering/Common/Passes.h.inc"

/// Options of the CPU pipeline.
struct CpuPipelineOptions {
  std::string entry = "main";
  unsigned numThreads = 0; // 0: the machine's hardware threads
  int64_t vectorWidth = 16; // f32 lanes of the host's vector registers
};

/// Options of the CUDA pipeline.
struct GpuPipelineOptions {
  std::string chip = "sm_90";
  std::string libdevice; // libdevice.10.bc to link, for f64 math
  /// Shape of the tensor-core matmul kernel (sm_80 and later).
  /// (H200 sweep, docs/cuda.md: 128x256 outputs, 2 stages of 128 bytes.)
  int64_t mmaTileN = 256;
  int64_t mmaStages = 2;
  int64_t mmaStepBytes = 128;
  bool tf32 = false; // f32 matmuls on tensor cores, inputs rounded to tf32
};

/// Options of the Vulkan pipeline: the SPIR-V target environment.
struct SpirvPipelineOptions {
  std::string version = "v1.3";
  std::vector<std::string> capabilities, extensions;
  /// maxComputeWorkGroupCount: 65535 per dim is what Vulkan guarantees.
  std::vector<int64_t> maxGrid = {65535, 65535, 65535};
  /// Float widths whose NaN and infinities the driver must preserve
  /// (SignedZeroInfNanPreserve); empty where the device cannot promise it.
  std::vector<int32_t> preserveNanWidths;
  /// Correctly rounded f32 division from 64-bit integer operations
  /// (kiln-exact-f32-division); needs the Int64 capability.
  bool exactF32Division = true;
  /// What every Vulkan 1.1 compute device kiln targets has: subgroup
  /// arithmetic, and 8/16/64-bit types (lavapipe and NVIDIA have them all).
  static SpirvPipelineOptions baseline();
};

/// kiln -> fused, outlined kernels on linalg tensors (`kiln-to-kernels`).
/// `maxKernelBuffers`: most distinct tensors one kernel may read and write
/// (0: no limit); longer fused chains are split.
void buildKilnToKernelsPipeline(mlir::OpPassManager &pm,
                                unsigned maxKernelBuffers = 0);
/// kiln -> LLVM dialect for the host CPU (`kiln-to-cpu-llvm`).
void buildKilnToCpuLLVMPipeline(mlir::OpPassManager &pm,
                                const CpuPipelineOptions &options);
/// The second half of the above: fused kernels -> LLVM dialect.
void buildKernelsToCpuLLVMPipeline(mlir::OpPassManager &pm,
                                   const CpuPipelineOptions &options);
/// Fused kernels -> gpu.binary ops holding PTX, and a host function of
/// allocations and gpu.launch_func ops (`kiln-to-nvvm`).
void buildKernelsToNvvmPipeline(mlir::OpPassManager &pm,
                                const GpuPipelineOptions &options);
/// Registers kiln's passes and named pipelines (for kiln-opt).
void registerKilnLoweringPasses();
/// Fused kernels -> spirv.modules (one per gpu.module, kept beside it) and
/// the same host function as for CUDA (`kiln-to-spirv`).
void buildKernelsToSpirvPipeline(mlir::OpPassManager &pm,
                                 const SpirvPipelineOptions &options);

} // namespace kiln

#endif
