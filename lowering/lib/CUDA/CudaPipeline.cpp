//===- CudaPipeline.cpp - fused kernels -> PTX and a host plan -----------===//
#include "kiln/Lowering/CUDA/Passes.h"
#include "kiln/Lowering/Common/Passes.h"
#include "kiln/Lowering/GPU/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace kiln {

/// 90 for "sm_90" or "sm_90a"; 0 when `chip` is not of that form.
static int computeCapability(llvm::StringRef chip) {
  int capability = 0;
  if (!chip.consume_front("sm_"))
    return 0;
  chip.consumeInteger(10, capability);
  return capability;
}

/// The shared memory a block may opt in to on a compute capability.
static int64_t sharedMemoryPerBlock(int capability) {
  if (capability >= 90)
    return 227 * 1024;
  if (capability == 80 || capability == 87)
    return 163 * 1024;
  if (capability >= 86)
    return 99 * 1024;
  return 48 * 1024;
}

AttentionFusion cudaAttentionFusion(llvm::StringRef chip) {
  return computeCapability(chip) >= 80 ? AttentionFusion::tensorCores : AttentionFusion::none;
}

/// Blocks of the matmul kernels (one per SM) that fill a chip of a compute
/// capability, where the device's own count is not known (compiles
/// without a device): its data-center part's SM count (H100/H200 132, A100
/// 108), a consumer part's otherwise.
static int64_t blocksToFill(int capability) {
  if (capability >= 90)
    return 132;
  if (capability == 80)
    return 108;
  return 64;
}

void buildKernelsToNvvmPipeline(OpPassManager &pm, const CudaPipelineOptions &options) {
  KilnCudaTileMatmulOptions matmul;
  matmul.tensorCores = computeCapability(options.chip) >= 80;
  matmul.maxSharedBytes = sharedMemoryPerBlock(computeCapability(options.chip));
  matmul.fillBlocks = options.multiprocessors > 0 ? options.multiprocessors
                                                  : blocksToFill(computeCapability(options.chip));
  // A tiling the chip's shared memory cannot hold falls back to one that
  // fits every tensor-core chip.
  CudaMmaMatmulTunables mma = options.mma.sharedBytes() > matmul.maxSharedBytes
                                  ? CudaMmaMatmulTunables::portable()
                                  : options.mma;
  matmul.mmaTileN = mma.tileN;
  matmul.mmaStages = mma.stages;
  matmul.mmaStepBytes = mma.stepBytes;
  matmul.tf32 = options.tf32;
  // wgmma is sm_90a's alone (arch-specific PTX, not forward compatible).
  matmul.wgmma = options.wgmma && options.chip == "sm_90a";
  buildGpuBufferizationPipeline(pm);
  pm.addPass(createKilnCudaTileMatmul(matmul));
  if (matmul.wgmma) {
    KilnCudaWgmmaAttentionOptions attention;
    attention.maxSharedBytes = matmul.maxSharedBytes;
    pm.addPass(createKilnCudaWgmmaAttention(attention));
  }
  if (matmul.tensorCores) {
    KilnCudaMmaAttentionOptions attention;
    attention.maxSharedBytes = matmul.maxSharedBytes;
    pm.addPass(createKilnCudaMmaAttention(attention));
  }
  GpuOutliningOptions outlining;
  // Bare pointers need static types; a flat buffer's length is never read.
  outlining.flatBufferSize = int64_t(1) << 40;
  outlining.vectorizeRunTimeSizes = true;
  // atom.add on global memory: f32 and f64 (sm_60 on), i32, i64 (as u64).
  outlining.atomicAddTypes = {"f32", "f64", "i32", "i64"};
  buildGpuKernelOutliningPipeline(pm, outlining);
  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip;
  target.optLevel = 3;
  if (!options.libdevice.empty())
    target.linkLibs.push_back(options.libdevice);
  pm.addPass(createGpuNVVMAttachTarget(target));
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createKilnCudaDataLayout());
  kernels.addPass(createKilnCudaReductionOccupancy());
  kernels.addPass(createKilnCudaLowerReductions());
  kernels.addPass(createConvertNVGPUToNVVMPass());
  kernels.addPass(createSCFToControlFlowPass());
  kernels.addPass(createConvertVectorToLLVMPass());
  // Shapes are static, so a buffer is one pointer, not an expanded
  // descriptor: the 4 KiB of kernel parameters then hold ~500 buffers.
  ConvertGpuOpsToNVVMOpsOptions nvvm;
  nvvm.useBarePtrCallConv = true;
  kernels.addPass(createConvertGpuOpsToNVVMOps(nvvm));
  // Tensor maps (the wgmma kernel's TMA) are 128-byte parameters.
  kernels.addPass(createKilnCudaTensorMapParams());
  // NVVM ops that exist as PTX text only (wgmma, fence.proxy) become inline asm.
  kernels.addPass(createConvertNVVMToLLVMPass());
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());
  kernels.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void buildNvvmToPtxPipeline(OpPassManager &pm) {
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = "isa";
  pm.addPass(createGpuModuleToBinaryPass(binary));
}

void registerKilnCudaPipelines() {
  PassPipelineRegistration<>(
      "kiln-to-nvvm", "kiln -> PTX in gpu.binary ops (sm_90), host plan in func",
      [](OpPassManager &pm) {
        buildKilnToKernelsPipeline(pm, 0, cudaAttentionFusion("sm_90"));
        buildKernelsToNvvmPipeline(pm, {});
        buildNvvmToPtxPipeline(pm);
      });
}

} // namespace kiln
