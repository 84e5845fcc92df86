//===- GpuPipelines.cpp - the pipeline stages both GPU targets share -----===//
#include "kiln/Lowering/Common/Passes.h"
#include "kiln/Lowering/GPU/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace kiln {

void buildGpuBufferizationPipeline(OpPassManager &pm) {
  pm.addPass(createKilnGpuMaterializeConstants());
  buildKernelBufferizationPipeline(pm);
}

void buildGpuKernelOutliningPipeline(OpPassManager &pm, const GpuOutliningOptions &options) {
  ArrayRef<int64_t> maxGrid = options.maxGrid;
  pm.addPass(createKilnCopiesToLinalg());
  KilnAttentionToLoopsOptions attention;
  attention.maxThreadIterations = options.maxThreadIterations;
  pm.addPass(createKilnAttentionToLoops(attention));
  pm.addPass(createKilnExpandMath());
  KilnGpuScansOptions scans;
  if (!maxGrid.empty())
    scans.maxGridX = maxGrid.front();
  pm.addPass(createKilnGpuScans(scans));
  KilnGpuArgReductionsOptions argReductions;
  if (!maxGrid.empty())
    argReductions.maxGridX = maxGrid.front();
  pm.addPass(createKilnGpuArgReductions(argReductions));
  KilnGpuScatterAddsOptions scatterAdds;
  scatterAdds.atomicTypes.assign(options.atomicAddTypes.begin(), options.atomicAddTypes.end());
  pm.addPass(createKilnGpuScatterAdds(scatterAdds));
  pm.addPass(createKilnGpuColumnChains());
  pm.addPass(createKilnGpuNormalizeReductions());
  pm.addPass(createKilnGpuSplitReductions());
  KilnGpuRowReductionsOptions rows;
  rows.hoistRowValues = options.hoistRowValues;
  rows.runTimeSizes = options.vectorizeRunTimeSizes;
  if (!maxGrid.empty())
    rows.maxGridX = maxGrid.front();
  pm.addPass(createKilnGpuRowReductions(rows));
  KilnVectorizeOptions vectorize;
  vectorize.vectorWidth = VectorizeTunables{}.gpuLanes;
  vectorize.runTimeSizes = options.vectorizeRunTimeSizes;
  pm.addPass(createKilnVectorize(vectorize));
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
  KilnGpuKernelSizesOptions sizes;
  sizes.flatSize = options.flatBufferSize;
  pm.addPass(createKilnGpuKernelSizes(sizes));
  pm.addPass(createLowerAffinePass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

} // namespace kiln
