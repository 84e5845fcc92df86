//===- CpuFlattenParallelLoops.cpp - the kiln-cpu-flatten-parallel-loops pass ===//
//
// Leaves async-parallel-for one level of one-dim scf.parallel loops to split
// into blocks (see Passes.td for the LLVM 22 bugs this avoids):
// - a loop with a loop nested in it (the outer loop of a reduction over a
//   middle dim: parallel, for, parallel) runs serially, so that only the
//   innermost level is split across threads;
// - every other loop of several dims becomes one dim over their product
//   (indices recovered by div/rem of constants).
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

/// The loops async-parallel-for splits across threads: those without
/// reductions.
bool isSplit(scf::ParallelOp loop) { return loop.getNumResults() == 0; }

/// Replaces `loop` by a nest of scf.for loops with the same body.
void serialize(IRRewriter &rewriter, scf::ParallelOp loop) {
  rewriter.setInsertionPoint(loop);
  scf::LoopNest nest =
      scf::buildLoopNest(rewriter, loop.getLoc(), loop.getLowerBound(),
                         loop.getUpperBound(), loop.getStep());
  SmallVector<Value> ivs = llvm::map_to_vector(
      nest.loops, [](scf::ForOp f) -> Value { return f.getInductionVar(); });
  Block *inner = nest.loops.back().getBody();
  rewriter.eraseOp(loop.getBody()->getTerminator());
  rewriter.inlineBlockBefore(loop.getBody(), inner->getTerminator(), ivs);
  rewriter.eraseOp(loop);
}

struct KilnCpuFlattenParallelLoopsPass
    : kiln::impl::KilnCpuFlattenParallelLoopsBase<KilnCpuFlattenParallelLoopsPass> {
  void runOnOperation() override {
    SmallVector<scf::ParallelOp> outer, multiDim;
    getOperation().walk([&](scf::ParallelOp loop) {
      if (!isSplit(loop))
        return;
      bool hasNested = loop.getBody()
                           ->walk([](scf::ParallelOp nested) {
                             return isSplit(nested) ? WalkResult::interrupt()
                                                    : WalkResult::advance();
                           })
                           .wasInterrupted();
      if (hasNested)
        outer.push_back(loop);
      else if (loop.getNumLoops() > 1)
        multiDim.push_back(loop);
    });
    IRRewriter rewriter(&getContext());
    for (scf::ParallelOp loop : outer)
      serialize(rewriter, loop);
    for (scf::ParallelOp loop : multiDim) {
      std::vector<unsigned> all(loop.getNumLoops());
      std::iota(all.begin(), all.end(), 0u);
      rewriter.setInsertionPoint(loop);
      collapseParallelLoops(rewriter, loop, {all});
    }
  }
};
} // namespace
