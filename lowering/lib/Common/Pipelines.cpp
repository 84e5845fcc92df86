//===- Pipelines.cpp - kiln's named lowering pipelines -------------------===//
#include "kiln/Lowering/Common/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Async/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Dialect/SPIRV/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include <thread>

using namespace mlir;

namespace kiln {

void buildKilnToKernelsPipeline(OpPassManager &pm, unsigned maxKernelBuffers) {
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createConvertKilnToLinalg());
  KilnFormKernelsOptions formKernels;
  formKernels.maxBuffers = maxKernelBuffers;
  pm.addPass(createKilnFormKernels(formKernels));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void buildKilnToCpuLLVMPipeline(OpPassManager &pm,
                                const CpuPipelineOptions &options) {
  buildKilnToKernelsPipeline(pm);
  buildKernelsToCpuLLVMPipeline(pm, options);
}

/// Kernels on tensors -> one host function on buffers that writes its
/// results into caller-provided out-params.
static void addBufferization(OpPassManager &pm) {
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // Inlining the kernels before turning results into out-params lets a
  // kernel write straight into the caller's output buffer instead of a
  // temporary that is copied.
  pm.addPass(createInlinerPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createKilnDistinctResults());
  bufferization::BufferResultsToOutParamsPassOptions outParams;
  outParams.hoistStaticAllocs = true;
  outParams.modifyPublicFunctions = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
}

/// Bufferized kernels -> gpu.launch_func on the host and outlined kernels
/// in gpu.modules: the part of the GPU pipelines every GPU target shares.
/// `vectorWidth` lanes per thread access (0: scalar accesses).
/// `maxGrid`: the most blocks per grid dim (empty: CUDA's). `tileMatmul`:
/// matmuls as shared-memory tiled kernels (workgroup attributions, which the
/// SPIR-V conversion does not take yet).
static void addGpuKernelOutlining(OpPassManager &pm, int64_t vectorWidth,
                                  ArrayRef<int64_t> maxGrid = {},
                                  std::optional<KilnGpuTileMatmulOptions> tileMatmul = {}) {
  pm.addPass(createKilnGpuMaterializeConstants());
  addBufferization(pm);
  if (tileMatmul)
    pm.addPass(createKilnGpuTileMatmul(*tileMatmul));
  pm.addPass(createKilnCopiesToLinalg());
  pm.addPass(createKilnExpandMath());
  KilnGpuRowReductionsOptions rows;
  rows.vectorWidth = vectorWidth;
  pm.addPass(createKilnGpuRowReductions(rows));
  if (vectorWidth > 1) {
    KilnVectorizeOptions vectorize;
    vectorize.vectorWidth = vectorWidth;
    pm.addPass(createKilnVectorize(vectorize));
  }
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  pm.addPass(createCanonicalizerPass());
  KilnGpuMapLoopsOptions mapLoops;
  mapLoops.maxGrid.assign(maxGrid.begin(), maxGrid.end());
  pm.addPass(createKilnGpuMapLoops(mapLoops));
  pm.addNestedPass<func::FuncOp>(createGpuMapParallelLoopsPass());
  pm.addNestedPass<func::FuncOp>(createConvertParallelLoopToGpuPass());
  // Folds launch sizes to constants, which outlining then records as the
  // kernel's known block size instead of passing them as parameters; the
  // constants the canonicalizer hoists out of launch bodies go back in.
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createGpuLaunchSinkIndexComputationsPass());
  // Each buffer one kernel parameter, however many views of it a kernel
  // reads: the views are folded into the accesses once outlined.
  pm.addPass(createKilnGpuSinkViews());
  pm.addPass(createGpuKernelOutliningPass());
  pm.addNestedPass<gpu::GPUModuleOp>(memref::createFoldMemRefAliasOpsPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

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

void buildKernelsToNvvmPipeline(OpPassManager &pm,
                                const GpuPipelineOptions &options) {
  KilnGpuTileMatmulOptions matmul;
  matmul.tensorCores = computeCapability(options.chip) >= 80;
  matmul.mmaTileN = options.mmaTileN;
  matmul.mmaStages = options.mmaStages;
  matmul.tf32 = options.tf32;
  matmul.mmaStepBytes = options.mmaStepBytes;
  matmul.maxSharedBytes = sharedMemoryPerBlock(computeCapability(options.chip));
  // A tiling the chip's shared memory cannot hold falls back to one that
  // fits every tensor-core chip (32 KiB).
  if (options.mmaStages * (128 + options.mmaTileN) * options.mmaStepBytes >
      matmul.maxSharedBytes) {
    matmul.mmaTileN = 128;
    matmul.mmaStages = 2;
    matmul.mmaStepBytes = 64;
  }
  addGpuKernelOutlining(pm, /*vectorWidth=*/4, /*maxGrid=*/{}, matmul);
  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip;
  target.optLevel = 3;
  if (!options.libdevice.empty())
    target.linkLibs.push_back(options.libdevice);
  pm.addPass(createGpuNVVMAttachTarget(target));
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createKilnGpuLowerReductions());
  kernels.addPass(createConvertNVGPUToNVVMPass());
  kernels.addPass(createSCFToControlFlowPass());
  kernels.addPass(createConvertVectorToLLVMPass());
  // Shapes are static, so a buffer is one pointer, not an expanded
  // descriptor: the 4 KiB of kernel parameters then hold ~500 buffers.
  ConvertGpuOpsToNVVMOpsOptions nvvm;
  nvvm.useBarePtrCallConv = true;
  kernels.addPass(createConvertGpuOpsToNVVMOps(nvvm));
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());
  kernels.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = "isa";
  pm.addPass(createGpuModuleToBinaryPass(binary));
}

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
  // the pointer casts this yields into vector-typed buffers.
  addGpuKernelOutlining(pm, /*vectorWidth=*/4, options.maxGrid);
  GpuSPIRVAttachTargetOptions target;
  target.spirvVersion = options.version;
  target.spirvCapabilities.assign(options.capabilities.begin(),
                                  options.capabilities.end());
  target.spirvExtensions.assign(options.extensions.begin(),
                                options.extensions.end());
  target.clientApi = "Vulkan";
  pm.addPass(createGpuSPIRVAttachTarget(target));
  // convert-gpu-to-spirv converts arith, scf.for/if/while, memref and
  // vector; not math, nor the serial scf.parallel loops left in kernels.
  pm.addNestedPass<gpu::GPUModuleOp>(createParallelForToNestedForsPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createKilnExpandF64Math());
  if (options.exactF32Division)
    pm.addNestedPass<gpu::GPUModuleOp>(createKilnExactF32Division());
  pm.addNestedPass<gpu::GPUModuleOp>(createKilnSpirvPrepareKernels());
  pm.addNestedPass<gpu::GPUModuleOp>(createConvertMathToSPIRVPass());
  pm.addPass(createConvertGPUToSPIRVPass());
  OpPassManager &kernels = pm.nest<spirv::ModuleOp>();
  kernels.addPass(spirv::createSPIRVLowerABIAttributesPass());
  kernels.addPass(createKilnSpirvVectorBuffers());
  if (!options.preserveNanWidths.empty()) {
    KilnSpirvPreserveNanOptions preserve;
    preserve.widths.assign(options.preserveNanWidths.begin(),
                           options.preserveNanWidths.end());
    kernels.addPass(createKilnSpirvPreserveNan(preserve));
  }
  kernels.addPass(createKilnSpirvNoContraction());
  kernels.addPass(spirv::createSPIRVUpdateVCEPass());
}

void buildKernelsToCpuLLVMPipeline(OpPassManager &pm,
                                   const CpuPipelineOptions &options) {
  addBufferization(pm);
  bufferization::BufferDeallocationPipelineOptions dealloc;
  bufferization::buildBufferDeallocationPipeline(pm, dealloc);

  KilnCpuTileMatmulOptions tile;
  tile.vectorWidth = options.vectorWidth;
  pm.addPass(createKilnCpuTileMatmul(tile));
  KilnVectorizeOptions vectorize;
  vectorize.vectorWidth = options.vectorWidth;
  pm.addPass(createKilnVectorize(vectorize));
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  pm.addPass(createCanonicalizerPass());
  unsigned threads = options.numThreads ? options.numThreads
                                        : std::thread::hardware_concurrency();
  pm.addPass(createKilnCpuFlattenParallelLoops());
  pm.addPass(createCanonicalizerPass()); // folds the collapsed bounds
  AsyncParallelForPassOptions parallel;
  parallel.asyncDispatch = false;
  parallel.numWorkerThreads = static_cast<int32_t>(std::max(threads, 1u));
  parallel.minTaskSize = 1024;
  pm.addPass(createAsyncParallelForPass(parallel));
  pm.addPass(createKilnExpandMath());
  pm.addPass(createAsyncToAsyncRuntimePass());
  pm.addPass(createAsyncRuntimeRefCountingPass());
  pm.addPass(createAsyncRuntimeRefCountingOptPass());
  pm.addPass(createConvertAsyncToLLVMPass());

  KilnCpuEntryOptions entry;
  entry.entry = options.entry;
  pm.addPass(createKilnCpuEntry(entry));
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  // Math with an LLVM intrinsic (fma on vectors too) goes first; only what is
  // left (f64 erf, tanh, ...) becomes libm calls, which would scalarise.
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
}

void registerKilnLoweringPasses() {
  registerKilnPasses();
  PassPipelineRegistration<>("kiln-to-kernels",
                             "kiln -> fused kernels on linalg tensors",
                             [](OpPassManager &pm) { buildKilnToKernelsPipeline(pm); });
  PassPipelineRegistration<>(
      "kiln-to-cpu-llvm", "kiln -> LLVM dialect for the host CPU",
      [](OpPassManager &pm) { buildKilnToCpuLLVMPipeline(pm, {}); });
  PassPipelineRegistration<>(
      "kiln-to-nvvm", "kiln -> PTX in gpu.binary ops (sm_90), host plan in func",
      [](OpPassManager &pm) {
        buildKilnToKernelsPipeline(pm);
        buildKernelsToNvvmPipeline(pm, {});
      });
  PassPipelineRegistration<>(
      "kiln-to-spirv",
      "kiln -> SPIR-V in spirv.modules (Vulkan 1.1 baseline), host plan in func",
      [](OpPassManager &pm) {
        buildKilnToKernelsPipeline(pm);
        buildKernelsToSpirvPipeline(pm, SpirvPipelineOptions::baseline());
      });
}

} // namespace kiln
