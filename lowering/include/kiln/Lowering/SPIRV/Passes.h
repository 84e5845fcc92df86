//===- Passes.h - the SPIR-V target's passes and pipeline -------*- C++ -*-===//
#ifndef KILN_LOWERING_SPIRV_PASSES_H
#define KILN_LOWERING_SPIRV_PASSES_H

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace kiln {

#define GEN_PASS_DECL
#include "kiln/Lowering/SPIRV/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "kiln/Lowering/SPIRV/Passes.h.inc"

/// Options of the Vulkan pipeline: the SPIR-V target environment.
struct SpirvPipelineOptions {
  std::string version = "v1.3";
  std::vector<std::string> capabilities, extensions;
  /// maxComputeWorkGroupCount: 65535 per dim is what Vulkan guarantees.
  std::vector<int64_t> maxGrid = {65535, 65535, 65535};
  /// Float widths whose NaN and infinities the driver must preserve
  /// (SignedZeroInfNanPreserve); empty where the device cannot promise it.
  std::vector<int32_t> preserveNanWidths;
  /// Float widths whose subnormals the driver must keep (DenormPreserve);
  /// empty where the device cannot promise it.
  std::vector<int32_t> preserveDenormWidths;
  /// Correctly rounded f32 division from 64-bit integer operations
  /// (kiln-spirv-exact-f32-division); needs the Int64 capability.
  bool exactF32Division = true;
  /// The f16 x f16 -> f32 cooperative-matrix shape (M, N, K) f16 matmuls run
  /// on (kiln-spirv-tile-matmul); empty: none.
  std::vector<int64_t> f16CooperativeMatrix;
  int64_t subgroupSize = 32;
  /// The device's workgroup limits the matmul's tiling must fit.
  int64_t maxWorkgroupBytes = 49152, maxWorkgroupInvocations = 1024;
  /// Multiprocessors the SIMT matmul fills (0: unknown, the default tiling).
  int64_t multiprocessors = 0;
  /// Element types scatter_add adds atomically (kiln-gpu-scatter-adds):
  /// i32 everywhere (OpAtomicIAdd is core), f32/f64 where the device has
  /// VK_EXT_shader_atomic_float.
  std::vector<std::string> atomicAddTypes = {"i32"};
  /// Loop iterations one invocation may run (VulkanTarget's
  /// maxInvocationLoopIterations; 0: no bound).
  int64_t maxThreadIterations = 32768;
  /// What every Vulkan 1.1 compute device kiln targets has: subgroup
  /// arithmetic, and 8/16/64-bit types (lavapipe and NVIDIA have them all).
  static SpirvPipelineOptions baseline();
};

/// Fused kernels -> spirv.modules (one per gpu.module, kept beside it) and
/// the same host function as for CUDA.
void buildKernelsToSpirvPipeline(mlir::OpPassManager &pm,
                                 const SpirvPipelineOptions &options);
/// Registers `kiln-to-spirv`: kiln -> SPIR-V for the Vulkan 1.1 baseline.
void registerKilnSpirvPipelines();

} // namespace kiln

#endif
