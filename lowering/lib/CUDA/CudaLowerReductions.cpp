//===- GpuLowerReductions.cpp - the kiln-gpu-lower-reductions pass -------===//
//
// gpu.all_reduce has no lowering of its own in the NVVM conversion: rewrite
// it (in outlined kernels) into warp shuffles and a workgroup buffer.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/Common/Passes.h"

#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_KILNGPULOWERREDUCTIONS
#include "kiln/Lowering/Common/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
struct KilnGpuLowerReductionsPass
    : kiln::impl::KilnGpuLowerReductionsBase<KilnGpuLowerReductionsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateGpuAllReducePatterns(patterns);
    populateGpuShufflePatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
