//===- Pipelines.cpp - the pipeline stages every target shares -----------===//
#include "kiln/Lowering/Common/Passes.h"
#include "kiln/Lowering/KilnToLinalg/Passes.h"

#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace kiln {

void buildKilnToKernelsPipeline(OpPassManager &pm, unsigned maxKernelBuffers,
                                AttentionFusion attention) {
  pm.addPass(createCanonicalizerPass());
  ConvertKilnToLinalgOptions toLinalg;
  toLinalg.attentionFusion = attention;
  pm.addPass(createConvertKilnToLinalg(toLinalg));
  KilnFormKernelsOptions formKernels;
  formKernels.maxBuffers = maxKernelBuffers;
  pm.addPass(createKilnFormKernels(formKernels));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void buildKernelBufferizationPipeline(OpPassManager &pm) {
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
  // A result of run-time size is written into its out-param too, not into
  // a buffer of its own that is then copied (the runtime allocates it at
  // the size the shape class computes, which is the kernel's).
  outParams.hoistDynamicAllocs = true;
  outParams.modifyPublicFunctions = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  pm.addPass(createKilnReshapedResults());
}

void registerKilnCommonPipelines() {
  PassPipelineRegistration<>("kiln-to-kernels",
                             "kiln -> fused kernels on linalg tensors",
                             [](OpPassManager &pm) { buildKilnToKernelsPipeline(pm); });
}

} // namespace kiln
