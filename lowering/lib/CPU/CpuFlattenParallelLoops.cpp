//===- CpuFlattenParallelLoops.cpp - the kiln-cpu-flatten-parallel-loops pass ===//
//
// Leaves async-parallel-for one level of one-dim scf.parallel loops to split
// into blocks (see Passes.td for the LLVM 22 bugs this avoids):
// - of nested loops (a reduction over a middle dim: parallel, for,
//   parallel) only one level, the one with the most iterations, stays
//   parallel; the others run serially;
// - every other loop of several dims becomes one dim over their product
//   (indices recovered by div/rem of constants); an innermost dim of
//   run-time size (a `?` row) first becomes a serial loop inside the
//   others, which would recover its index by dividing by a run-time size
//   on every iteration; so do static innermost dims of at least 16
//   iterations together (a convolution's patch gather spent ~50
//   instructions an element recovering 7 indices), and a vector loop of
//   a few vectors a row (a pad's 56-wide rows), the loop around them then
//   taking proportionally fewer iterations per task.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"

#include <limits>
#include <numeric>

namespace kiln {
#define GEN_PASS_DEF_KILNCPUFLATTENPARALLELLOOPS
#include "kiln/Lowering/CPU/Passes.h.inc"
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

/// Innermost static dims of at least this many iterations together run as
/// serial loops: their indices are counters, not a div/rem of the
/// flattened index per iteration.
constexpr int64_t kMinSerialIterations = 16;

/// The iterations of dim `d` of `loop` (the most an index can hold when
/// not static).
int64_t tripCount(scf::ParallelOp loop, unsigned d) {
  std::optional<int64_t> l = getConstantIntValue(loop.getLowerBound()[d]),
                         u = getConstantIntValue(loop.getUpperBound()[d]),
                         s = getConstantIntValue(loop.getStep()[d]);
  if (!l || !u || !s || *s <= 0)
    return std::numeric_limits<int64_t>::max();
  return std::max<int64_t>(0, llvm::divideCeil(*u - *l, *s));
}

/// The iterations of `loop` (the most an index can hold when not static).
int64_t tripCount(scf::ParallelOp loop) {
  int64_t count = 1;
  for (unsigned d = 0; d < loop.getNumLoops(); ++d) {
    int64_t dim = tripCount(loop, d);
    if (dim == std::numeric_limits<int64_t>::max())
      return dim;
    count *= dim;
  }
  return count;
}

/// The split loops nested in `loop`, innermost first.
SmallVector<scf::ParallelOp> nestedSplitLoops(scf::ParallelOp loop) {
  SmallVector<scf::ParallelOp> nested;
  loop.getBody()->walk([&](scf::ParallelOp n) {
    if (isSplit(n))
      nested.push_back(n);
  });
  return nested;
}

/// The nearest split loop around `op`, or null.
scf::ParallelOp splitParent(Operation *op) {
  for (auto p = op->getParentOfType<scf::ParallelOp>(); p;
       p = p->getParentOfType<scf::ParallelOp>())
    if (isSplit(p))
      return p;
  return {};
}

/// Leaves one level of split loops in the nest under `loop` (itself split,
/// under no split loop): `loop` when it carries kMinTaskSizeAttr or has at
/// least as many iterations as any loop nested in it, else (recursively)
/// the next level down.
void keepOneLevel(IRRewriter &rewriter, scf::ParallelOp loop) {
  SmallVector<scf::ParallelOp> nested = nestedSplitLoops(loop);
  // Iterations that are tasks of their own (kiln-cpu-row-kernels' rows)
  // are the level to split.
  if (loop->hasAttr(kiln::kMinTaskSizeAttr)) {
    for (scf::ParallelOp n : nested)
      serialize(rewriter, n);
    return;
  }
  int64_t most = 0;
  for (scf::ParallelOp n : nested)
    most = std::max(most, tripCount(n));
  if (tripCount(loop) >= most) {
    for (scf::ParallelOp n : nested)
      serialize(rewriter, n);
    return;
  }
  SmallVector<scf::ParallelOp> next;
  for (scf::ParallelOp n : nested)
    if (splitParent(n) == loop)
      next.push_back(n);
  serialize(rewriter, loop);
  for (scf::ParallelOp n : next)
    keepOneLevel(rewriter, n);
}

/// How many innermost dims of `loop` (of several dims) run serially: one of
/// run-time size, else the fewest static ones of kMinSerialIterations
/// together (leaving one dim parallel, and no more than a task's worth)
/// under a scalar body, or a vector body's innermost one of 2 to
/// kMinSerialIterations - 1 vectors, else none; and their iterations (0
/// when not static).
std::pair<unsigned, int64_t> serialInnermost(scf::ParallelOp loop) {
  unsigned dims = loop.getNumLoops();
  if (!getConstantIntValue(loop.getUpperBound().back()) ||
      !getConstantIntValue(loop.getLowerBound().back()))
    return {1, 0};
  // A vector body (a step past 1) pays the div/rem once for all its lanes;
  // kept flat, a long row's loop measured faster (a 4096^2 softmax: 9.5
  // against 12.2 ms). A short row's few vectors (a pad's 56-wide rows: 4)
  // run serially: recovering 3 indices per 64-byte copy took a pad twice
  // an elementwise op's time.
  if (getConstantIntValue(loop.getStep().back()) != 1) {
    int64_t vectors = tripCount(loop, dims - 1);
    return vectors > 1 && vectors < kMinSerialIterations ? std::pair<unsigned, int64_t>{1, vectors}
                                                         : std::pair<unsigned, int64_t>{0, 0};
  }
  int64_t iterations = 1;
  for (unsigned count = 1; count < dims; ++count) {
    unsigned d = dims - count;
    std::optional<int64_t> l = getConstantIntValue(loop.getLowerBound()[d]),
                           u = getConstantIntValue(loop.getUpperBound()[d]),
                           s = getConstantIntValue(loop.getStep()[d]);
    if (!l || !u || !s || *s <= 0)
      return {0, 0};
    iterations *= std::max<int64_t>(0, llvm::divideCeil(*u - *l, *s));
    // Past a task's worth, the loop around them could leave threads idle.
    if (iterations > kiln::kCheapIterationsPerTask)
      return {0, 0};
    if (iterations >= kMinSerialIterations)
      return {count, iterations};
  }
  return {0, 0};
}

/// Runs the innermost `count` dims of `loop` as scf.for loops inside a
/// parallel loop over the others; returns the innermost scf.for.
scf::ForOp serializeInnermost(IRRewriter &rewriter, scf::ParallelOp loop, unsigned count) {
  rewriter.setInsertionPoint(loop);
  Location loc = loop.getLoc();
  unsigned outerDims = loop.getNumLoops() - count;
  auto outer = scf::ParallelOp::create(rewriter, loc, loop.getLowerBound().take_front(outerDims),
                                       loop.getUpperBound().take_front(outerDims),
                                       loop.getStep().take_front(outerDims));
  SmallVector<Value> ivs(outer.getInductionVars());
  scf::ForOp inner;
  rewriter.setInsertionPoint(outer.getBody()->getTerminator());
  for (unsigned d = outerDims; d < loop.getNumLoops(); ++d) {
    inner = scf::ForOp::create(rewriter, loc, loop.getLowerBound()[d], loop.getUpperBound()[d],
                               loop.getStep()[d]);
    ivs.push_back(inner.getInductionVar());
    rewriter.setInsertionPoint(inner.getBody()->getTerminator());
  }
  rewriter.eraseOp(loop.getBody()->getTerminator());
  rewriter.inlineBlockBefore(loop.getBody(), inner.getBody()->getTerminator(), ivs);
  rewriter.eraseOp(loop);
  return inner;
}

struct KilnCpuFlattenParallelLoopsPass
    : kiln::impl::KilnCpuFlattenParallelLoopsBase<KilnCpuFlattenParallelLoopsPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<scf::ParallelOp> outermost;
    getOperation().walk([&](scf::ParallelOp loop) {
      if (isSplit(loop) && !splitParent(loop))
        outermost.push_back(loop);
    });
    for (scf::ParallelOp loop : outermost)
      keepOneLevel(rewriter, loop);
    SmallVector<scf::ParallelOp> multiDim;
    getOperation().walk([&](scf::ParallelOp loop) {
      if (isSplit(loop) && loop.getNumLoops() > 1)
        multiDim.push_back(loop);
    });
    for (scf::ParallelOp loop : multiDim) {
      // Iterations that are tasks of their own (kMinTaskSizeAttr) keep
      // every dim parallel: their index arithmetic is nothing beside them.
      auto taskSize = loop->getAttrOfType<IntegerAttr>(kiln::kMinTaskSizeAttr);
      auto [count, iterations] = taskSize ? std::pair<unsigned, int64_t>{0, 0}
                                          : serialInnermost(loop);
      scf::ForOp inner;
      if (count > 0) {
        inner = serializeInnermost(rewriter, loop, count);
        loop = inner->getParentOfType<scf::ParallelOp>();
      }
      if (loop.getNumLoops() > 1) {
        std::vector<unsigned> all(loop.getNumLoops());
        std::iota(all.begin(), all.end(), 0u);
        rewriter.setInsertionPoint(loop);
        Operation *before = loop->getPrevNode();
        Block *block = loop->getBlock();
        collapseParallelLoops(rewriter, loop, {all});
        // The collapsed loop is new: it takes the task size on.
        if (taskSize)
          for (Operation *op = before ? before->getNextNode() : &block->front(); op;
               op = op->getNextNode())
            if (auto collapsed = dyn_cast<scf::ParallelOp>(op)) {
              collapsed->setAttr(kiln::kMinTaskSizeAttr, taskSize);
              break;
            }
      }
      // A task keeps about the elements it had before the inner dims left.
      if (iterations > 0)
        inner->getParentOfType<scf::ParallelOp>()->setAttr(
            kiln::kMinTaskSizeAttr,
            rewriter.getIndexAttr(std::max<int64_t>(
                1, kiln::kCheapIterationsPerTask / iterations)));
    }
  }
};
} // namespace
