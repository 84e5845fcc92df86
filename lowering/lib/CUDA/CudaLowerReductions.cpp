//===- CudaLowerReductions.cpp - the kiln-cuda-lower-reductions pass -------===//
//
// gpu.all_reduce has no lowering of its own in the NVVM conversion: rewrite
// it (in outlined kernels) into warp shuffles and a workgroup buffer.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/CUDA/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_KILNCUDALOWERREDUCTIONS
#include "kiln/Lowering/CUDA/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
struct KilnCudaLowerReductionsPass
    : kiln::impl::KilnCudaLowerReductionsBase<KilnCudaLowerReductionsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateGpuAllReducePatterns(patterns);
    populateGpuShufflePatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
