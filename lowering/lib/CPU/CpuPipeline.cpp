//===- CpuPipeline.cpp - fused kernels -> LLVM dialect for the host CPU --===//
#include "kiln/Lowering/CPU/Passes.h"
#include "kiln/Lowering/Common/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Async/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include <thread>

using namespace mlir;

namespace kiln {

void buildKernelsToCpuLLVMPipeline(OpPassManager &pm,
                                   const CpuPipelineOptions &options) {
  buildKernelBufferizationPipeline(pm);
  bufferization::BufferDeallocationPipelineOptions dealloc;
  bufferization::buildBufferDeallocationPipeline(pm, dealloc);

  unsigned threads = std::max(options.numThreads ? options.numThreads
                                                 : std::thread::hardware_concurrency(),
                              1u);
  KilnCpuTileMatmulOptions tile;
  tile.vectorWidth = options.vectorWidth;
  tile.threads = threads;
  pm.addPass(createKilnCpuTileMatmul(tile));
  KilnCpuAttentionBlocksOptions attentionBlocks;
  attentionBlocks.vectorWidth = options.vectorWidth;
  attentionBlocks.bf16DotProducts = options.bf16DotProducts;
  pm.addPass(createKilnCpuAttentionBlocks(attentionBlocks));
  KilnAttentionToLoopsOptions attention;
  attention.lanes = options.vectorWidth;
  pm.addPass(createKilnAttentionToLoops(attention));
  pm.addPass(createKilnCpuArgReductions());
  KilnCpuRowKernelsOptions rows;
  rows.threads = threads;
  pm.addPass(createKilnCpuRowKernels(rows));
  // Copies (a pad's interior, a strided slice) as kernels, before the
  // passes that vectorise them; a pad fills only its borders.
  pm.addPass(createKilnCpuFillBorders());
  KilnCopiesToLinalgOptions copies;
  copies.generic = true;
  pm.addPass(createKilnCopiesToLinalg(copies));
  KilnCpuTransposeBlocksOptions transposes;
  transposes.vectorWidth = options.vectorWidth;
  pm.addPass(createKilnCpuTransposeBlocks(transposes));
  KilnCpuScansOptions scans;
  scans.vectorWidth = options.vectorWidth;
  pm.addPass(createKilnCpuScans(scans));
  KilnCpuInterchangeWindowsOptions windows;
  windows.vectorWidth = options.vectorWidth;
  pm.addPass(createKilnCpuInterchangeWindows(windows));
  KilnVectorizeOptions vectorize;
  vectorize.vectorWidth = options.vectorWidth;
  vectorize.runTimeSizes = true;
  // An f32 add's latency is 4 cycles and two issue per cycle: 4 chains of
  // adds keep a row's sum off its latency (and a reduction over outer dims
  // takes 4 vectors of each row a step).
  vectorize.accumulators = 4;
  vectorize.outerReductions = true;
  vectorize.threads = threads;
  vectorize.shortTails = true;
  vectorize.windowReads = true;
  vectorize.gatherReads = true;
  pm.addPass(createKilnVectorize(vectorize));
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createKilnCpuFlattenParallelLoops());
  pm.addPass(createCanonicalizerPass()); // folds the collapsed bounds
  KilnCpuAsyncParallelForOptions parallel;
  parallel.numWorkerThreads = static_cast<int32_t>(threads);
  parallel.minTaskSize = kCheapIterationsPerTask;
  pm.addPass(createKilnCpuAsyncParallelFor(parallel));
  pm.addPass(createKilnExpandMath());
  pm.addPass(createAsyncToAsyncRuntimePass());
  pm.addPass(createAsyncRuntimeRefCountingPass());
  pm.addPass(createAsyncRuntimeRefCountingOptPass());
  pm.addPass(createConvertAsyncToLLVMPass());

  KilnCpuEntryOptions entry;
  entry.entry = options.entry;
  pm.addPass(createKilnCpuEntry(entry));
  pm.addPass(createKilnCpuExpandRunTimeShapes());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  // Math with an LLVM intrinsic (fma on vectors too) goes first; only what is
  // left (f64 erf, tanh, ...) becomes libm calls, which would scalarise.
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  ConvertVectorToLLVMPassOptions vectorToLlvm;
  vectorToLlvm.x86Vector = options.bf16DotProducts; // the attention blocks' vdpbf16ps
  pm.addPass(createConvertVectorToLLVMPass(vectorToLlvm));
  // After math-to-libm, whose bf16 promotions add conversions too.
  pm.addPass(createKilnCpuBf16InIntegers());
  pm.addPass(createArithToLLVMConversionPass());
  // Temporaries come from libkiln-cpu-runtime.so, which keeps large ones
  // mapped between runs (runtime/cpu/KernelTemporaries.cpp).
  FinalizeMemRefToLLVMConversionPassOptions memrefToLlvm;
  memrefToLlvm.useGenericFunctions = true;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefToLlvm));
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
}

void registerKilnCpuPipelines() {
  PassPipelineRegistration<>("kiln-to-cpu-llvm", "kiln -> LLVM dialect for the host CPU",
                             [](OpPassManager &pm) {
                               buildKilnToKernelsPipeline(pm);
                               buildKernelsToCpuLLVMPipeline(pm, {});
                             });
}

} // namespace kiln
