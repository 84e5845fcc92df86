//===- GpuNormalizeReductions.cpp - kiln-gpu-normalize-reductions --------===//
//
// A reduction over adjacent loops (all dims of a matrix, H and W of NCHW)
// becomes one over a single loop of collapsed views, and its parallel loops
// move outside its reduced ones, so that the GPU reduction passes (or the
// generic mapping) give each output its own thread or block.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/GPU/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"

namespace kiln {
#define GEN_PASS_DEF_KILNGPUNORMALIZEREDUCTIONS
#include "kiln/Lowering/GPU/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// Runs of two or more adjacent reduction loops of `op`.
SmallVector<ReassociationIndices> adjacentReductionLoops(linalg::GenericOp op) {
  SmallVector<ReassociationIndices> runs;
  ReassociationIndices run;
  auto close = [&] {
    if (run.size() > 1)
      runs.push_back(run);
    run.clear();
  };
  for (auto [d, type] : llvm::enumerate(op.getIteratorTypesArray())) {
    if (type != utils::IteratorType::reduction)
      close();
    else
      run.push_back(static_cast<int64_t>(d));
  }
  close();
  return runs;
}

/// Whether each operand's view of `op` can collapse the dims `runs` index
/// (maps are projected permutations keeping each run contiguous; layouts
/// let memref.collapse_shape merge them without a copy).
bool collapsible(linalg::GenericOp op, ArrayRef<ReassociationIndices> runs) {
  // A window's index sums (pooling) collapse no dims.
  if (!llvm::all_of(op.getIndexingMapsArray(),
                    [](AffineMap map) { return map.isProjectedPermutation(); }) ||
      !linalg::areDimSequencesPreserved(op.getIndexingMapsArray(), runs))
    return false;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (!type)
      return false;
    AffineMap map = op.getMatchingIndexingMap(&operand);
    // The operand dims each run reads, grouped as collapse_shape wants.
    SmallVector<ReassociationIndices> groups;
    for (int64_t d = 0, rank = type.getRank(); d < rank;) {
      ReassociationIndices group{d};
      auto dim = dyn_cast<AffineDimExpr>(map.getResult(d));
      for (const ReassociationIndices &r : runs)
        if (dim && dim.getPosition() == static_cast<unsigned>(r.front()))
          for (size_t i = 1; i < r.size() && d + static_cast<int64_t>(i) < rank; ++i)
            group.push_back(d + static_cast<int64_t>(i));
      d += static_cast<int64_t>(group.size());
      groups.push_back(group);
    }
    if (!memref::CollapseShapeOp::isGuaranteedCollapsible(type, groups))
      return false;
  }
  return true;
}

/// Most outputs for which the parallel loops move outside: each output
/// then has a block of the row passes, and their grid is not capped
/// (Vulkan's maxComputeWorkGroupCount is at least 65535); more (or a
/// run-time count) keep the generic mapping's order.
constexpr int64_t kMaxRowBlocks = 65535;

/// The loops of `op`, parallel ones first, each kind in its order; empty
/// where they are in that order already, or where that would make more
/// outputs than kMaxRowBlocks.
SmallVector<unsigned> parallelLoopsFirst(linalg::GenericOp op) {
  int64_t outputs = 1;
  for (auto [range, type] : llvm::zip(op.getStaticLoopRanges(), op.getIteratorTypesArray()))
    if (type == utils::IteratorType::parallel) {
      if (ShapedType::isDynamic(range) || range > kMaxRowBlocks)
        return {};
      outputs *= range;
      if (outputs > kMaxRowBlocks)
        return {};
    }
  SmallVector<unsigned> order;
  for (utils::IteratorType kind : {utils::IteratorType::parallel, utils::IteratorType::reduction})
    for (auto [d, type] : llvm::enumerate(op.getIteratorTypesArray()))
      if (type == kind)
        order.push_back(static_cast<unsigned>(d));
  if (llvm::equal(order, llvm::seq<unsigned>(0, order.size())))
    order.clear();
  return order;
}

struct KilnGpuNormalizeReductionsPass
    : kiln::impl::KilnGpuNormalizeReductionsBase<KilnGpuNormalizeReductionsPass> {
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> reductions;
    getOperation().walk([&](linalg::GenericOp op) {
      if (op.hasPureBufferSemantics() && op.getNumReductionLoops() > 0)
        reductions.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::GenericOp op : reductions) {
      SmallVector<ReassociationIndices> runs = adjacentReductionLoops(op);
      if (!runs.empty() && collapsible(op, runs)) {
        rewriter.setInsertionPoint(op);
        FailureOr<linalg::CollapseResult> collapsed =
            linalg::collapseOpIterationDims(op, runs, rewriter);
        if (succeeded(collapsed)) {
          rewriter.eraseOp(op);
          op = cast<linalg::GenericOp>(collapsed->collapsedOp.getOperation());
        }
      }
      if (SmallVector<unsigned> order = parallelLoopsFirst(op); !order.empty())
        (void)linalg::interchangeGenericOp(rewriter, op, order);
    }
  }
};

} // namespace
