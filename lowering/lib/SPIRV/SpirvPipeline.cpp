//===- SpirvPipeline.cpp - fused kernels -> SPIR-V and a host plan -------===//
#include "kiln/Lowering/Common/Passes.h"
#include "kiln/Lowering/GPU/Passes.h"
#include "kiln/Lowering/SPIRV/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Dialect/SPIRV/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

namespace kiln {

SpirvPipelineOptions SpirvPipelineOptions::baseline() {
  SpirvPipelineOptions o;
  o.capabilities = {"Shader", "GroupNonUniform", "GroupNonUniformArithmetic",
                    "Int8", "Int16", "Int64", "Float16", "Float64",
                    "StorageBuffer8BitAccess", "StorageBuffer16BitAccess"};
  o.extensions = {"SPV_KHR_storage_buffer_storage_class", "SPV_KHR_8bit_storage",
                  "SPV_KHR_16bit_storage"};
  return o;
}

void buildKernelsToSpirvPipeline(OpPassManager &pm,
                                 const SpirvPipelineOptions &options) {
  // 16 bytes of f32 per access as on CUDA; kiln-spirv-vector-buffers turns
  // the pointer casts this yields into vector-typed buffers. f16 matmuls run
  // on cooperative matrices where the device has them, other f32-accumulating
  // matmuls on the SIMT kernel; integer and f64 matmuls stay loop nests.
  buildGpuBufferizationPipeline(pm);
  if (!options.f16CooperativeMatrix.empty()) {
    KilnSpirvTileMatmulOptions matmul;
    matmul.mmaShape.assign(options.f16CooperativeMatrix.begin(),
                           options.f16CooperativeMatrix.end());
    matmul.subgroupSize = options.subgroupSize;
    matmul.maxWorkgroupBytes = options.maxWorkgroupBytes;
    matmul.maxInvocations = options.maxWorkgroupInvocations;
    pm.addPass(createKilnSpirvTileMatmul(matmul));
  }
  KilnSpirvSimtMatmulOptions simt;
  simt.maxWorkgroupBytes = options.maxWorkgroupBytes;
  simt.maxInvocations = options.maxWorkgroupInvocations;
  simt.maxThreadIterations = options.maxThreadIterations;
  simt.fillBlocks = options.multiprocessors;
  simt.maxGrid.assign(options.maxGrid.begin(), options.maxGrid.end());
  pm.addPass(createKilnSpirvSimtMatmul(simt));
  GpuOutliningOptions outlining;
  outlining.maxGrid.assign(options.maxGrid.begin(), options.maxGrid.end());
  outlining.hoistRowValues = true;
  outlining.atomicAddTypes.assign(options.atomicAddTypes.begin(), options.atomicAddTypes.end());
  outlining.maxThreadIterations = options.maxThreadIterations;
  buildGpuKernelOutliningPipeline(pm, outlining);
  GpuSPIRVAttachTargetOptions target;
  target.spirvVersion = options.version;
  target.spirvCapabilities.assign(options.capabilities.begin(),
                                  options.capabilities.end());
  target.spirvExtensions.assign(options.extensions.begin(),
                                options.extensions.end());
  target.clientApi = "Vulkan";
  pm.addPass(createGpuSPIRVAttachTarget(target));
  // kiln-spirv-convert-kernels converts arith, scf.for/if/while, memref and
  // vector; not math, nor the serial scf.parallel loops left in kernels.
  pm.addNestedPass<gpu::GPUModuleOp>(createParallelForToNestedForsPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createKilnSpirvBf16AsI16());
  pm.addNestedPass<gpu::GPUModuleOp>(createKilnSpirvF16RoundTrips());
  pm.addNestedPass<gpu::GPUModuleOp>(createKilnSpirvExpandF64Math());
  if (options.exactF32Division)
    pm.addNestedPass<gpu::GPUModuleOp>(createKilnSpirvExactF32Division());
  pm.addNestedPass<gpu::GPUModuleOp>(createKilnSpirvPrepareKernels());
  pm.addNestedPass<gpu::GPUModuleOp>(createConvertMathToSPIRVPass());
  pm.addPass(createKilnSpirvConvertKernels());
  OpPassManager &kernels = pm.nest<spirv::ModuleOp>();
  kernels.addPass(spirv::createSPIRVLowerABIAttributesPass());
  kernels.addPass(createKilnSpirvPushConstants());
  kernels.addPass(createKilnSpirvVectorBuffers());
  KilnSpirvFloatControlsOptions floatControls;
  floatControls.nanWidths.assign(options.preserveNanWidths.begin(),
                                 options.preserveNanWidths.end());
  floatControls.denormWidths.assign(options.preserveDenormWidths.begin(),
                                    options.preserveDenormWidths.end());
  kernels.addPass(createKilnSpirvFloatControls(floatControls));
  kernels.addPass(createKilnSpirvNoContraction());
  kernels.addPass(spirv::createSPIRVUpdateVCEPass());
  kernels.addPass(createKilnSpirvInt64Atomics());
}

void registerKilnSpirvPipelines() {
  PassPipelineRegistration<>(
      "kiln-to-spirv",
      "kiln -> SPIR-V in spirv.modules (Vulkan 1.1 baseline), host plan in func",
      [](OpPassManager &pm) {
        buildKilnToKernelsPipeline(pm);
        buildKernelsToSpirvPipeline(pm, SpirvPipelineOptions::baseline());
      });
}

} // namespace kiln
