//===- CpuFlattenParallelLoops.cpp - the kiln-cpu-flatten-parallel-loops pass ===//
//
// Each outermost scf.parallel of several dims becomes one dim over their
// product (indices recovered by div/rem of constants), so that
// async-parallel-for splits it into plain blocks. See Passes.td for the
// LLVM 22 bug this avoids.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"

#include <numeric>

namespace kiln {
#define GEN_PASS_DEF_KILNCPUFLATTENPARALLELLOOPS
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
struct KilnCpuFlattenParallelLoopsPass
    : kiln::impl::KilnCpuFlattenParallelLoopsBase<KilnCpuFlattenParallelLoopsPass> {
  void runOnOperation() override {
    SmallVector<scf::ParallelOp> loops;
    getOperation().walk([&](scf::ParallelOp loop) {
      if (loop.getNumLoops() > 1 && loop.getNumResults() == 0 &&
          !loop->getParentOfType<scf::ParallelOp>())
        loops.push_back(loop);
    });
    IRRewriter rewriter(&getContext());
    for (scf::ParallelOp loop : loops) {
      std::vector<unsigned> all(loop.getNumLoops());
      std::iota(all.begin(), all.end(), 0u);
      rewriter.setInsertionPoint(loop);
      collapseParallelLoops(rewriter, loop, {all});
    }
  }
};
} // namespace
