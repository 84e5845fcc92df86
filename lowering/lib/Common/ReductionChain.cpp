//===- ReductionChain.cpp - chains of reductions and row-wise ops --------===//
#include "kiln/Lowering/Common/ReductionChain.h"
#include "kiln/Lowering/Common/RowReduction.h"

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/EquivalenceClasses.h"

using namespace mlir;

namespace kiln {

Value rootOf(Value v) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>())
    v = view.getViewSource();
  return v;
}

namespace {

/// Whether `buffer` is a buffer of its own, which no other value aliases
/// except through views: an allocation, a global or an argument of the
/// function (not of a block inside it, nor a memref.transpose, which is
/// not a view op).
bool isOwnBuffer(Value buffer) {
  if (auto arg = dyn_cast<BlockArgument>(buffer))
    return arg.getOwner()->isEntryBlock() &&
           isa<FunctionOpInterface>(arg.getOwner()->getParentOp());
  return isa_and_nonnull<memref::AllocOp, memref::AllocaOp, memref::GetGlobalOp>(
      buffer.getDefiningOp());
}

/// Whether `map` indexes a buffer row by row (slab by slab): its results
/// are the loops in order, with or without the reduced loop `row`.
bool isRowLocal(AffineMap map, unsigned row) {
  AffineMap all = AffineMap::getMultiDimIdentityMap(map.getNumDims(), map.getContext());
  return map == all || map == all.dropResult(row);
}

/// The loop that `op` reduces where it can be a stage: the innermost (a
/// row reduction) or, with parallel loops inside it, an outer one (a
/// reduction over outer loops), the output indexed by the other loops in
/// order.
std::optional<unsigned> stageReducedLoop(linalg::GenericOp op) {
  unsigned last = op.getNumLoops() - 1;
  if (matchRowReduction(op))
    return last;
  auto iterators = op.getIteratorTypesArray();
  if (op.getNumReductionLoops() != 1 || iterators[last] != utils::IteratorType::parallel)
    return std::nullopt;
  unsigned row = llvm::find(iterators, utils::IteratorType::reduction) - iterators.begin();
  AffineMap all = AffineMap::getMultiDimIdentityMap(last + 1, op.getContext());
  if (op.getMatchingIndexingMap(op.getDpsInitOperand(0)) != all.dropResult(row))
    return std::nullopt;
  return row;
}

/// Whether `op` can be a stage: a reduction over one loop, or an
/// elementwise op writing in iteration order, with a scalar body and maps
/// that pick loops (no constants, no loop twice).
bool isStage(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInits() != 1 || op.getNumLoops() < 2 ||
      !hasScalarBody(op) ||
      !llvm::all_of(op.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isProjectedPermutation(); }))
    return false;
  if (stageReducedLoop(op))
    return true;
  return op.getNumParallelLoops() == op.getNumLoops() &&
         op.getMatchingIndexingMap(op.getDpsInitOperand(0)).isIdentity();
}

/// Ops that may sit between stages: a target takes them out of the
/// chain's way (pure ops and allocations before it, deallocations after).
bool isMovable(Operation &op) {
  return (isPure(&op) && op.getNumRegions() == 0) || isa<memref::AllocOp, memref::DeallocOp>(op);
}

/// Loop ranges that the block's generics say are equal: a linalg op's
/// operand dims over one loop agree, so `?` rows of an op's input and
/// output (or of an allocation sized from another buffer) match.
class EqualRanges {
public:
  explicit EqualRanges(Block &block) {
    for (auto g : block.getOps<linalg::GenericOp>()) {
      SmallVector<std::optional<RangeKey>> byLoop(g.getNumLoops());
      for (OpOperand &operand : g->getOpOperands()) {
        if (!isa<MemRefType>(operand.get().getType()))
          continue;
        for (auto [p, e] : llvm::enumerate(g.getMatchingIndexingMap(&operand).getResults())) {
          auto d = dyn_cast<AffineDimExpr>(e);
          if (!d)
            continue;
          RangeKey key = rangeKey(operand.get(), p);
          std::optional<RangeKey> &first = byLoop[d.getPosition()];
          if (first)
            classes.unionSets(*first, key);
          else
            first = classes.getOrInsertLeaderValue(key);
        }
      }
    }
  }
  /// The representatives of `op`'s loop ranges.
  SmallVector<RangeKey> loopsOf(linalg::GenericOp op) const {
    return llvm::map_to_vector(loopKeys(op), [&](const RangeKey &key) {
      return classes.contains(key) ? classes.getLeaderValue(key) : key;
    });
  }

private:
  llvm::EquivalenceClasses<RangeKey> classes;
};

} // namespace

SmallVector<ReductionChain, 0> ReductionChain::chainsIn(Block &block) {
  EqualRanges ranges(block);
  SmallVector<ReductionChain, 0> chains;
  SmallVector<Operation *> window; // since the current chain's first stage
  SmallVector<RangeKey> keys;      // its stages' loop ranges
  size_t lastStage = 0;            // one past its last stage in `window`
  auto close = [&]() {
    window.resize(lastStage);
    if (!window.empty())
      chains.push_back(ReductionChain(std::move(window)));
    window.clear();
    keys.clear();
    lastStage = 0;
  };
  for (Operation &op : block) {
    auto g = dyn_cast<linalg::GenericOp>(op);
    if (g && isStage(g)) {
      SmallVector<RangeKey> k = ranges.loopsOf(g);
      if (!keys.empty() && k != keys) {
        // The ops after the last stage may lead into the next chain.
        SmallVector<Operation *> rest(window.begin() + lastStage, window.end());
        close();
        window = std::move(rest);
      }
      keys = k;
      window.push_back(&op);
      lastStage = window.size();
      continue;
    }
    if (isa<linalg::FillOp>(op) || isMovable(op)) {
      window.push_back(&op);
      continue;
    }
    close();
  }
  close();
  return chains;
}

LogicalResult ReductionChain::analyze() {
  for (Operation *op : chainOps)
    if (auto g = dyn_cast<linalg::GenericOp>(op))
      generics.push_back(g);
  if (generics.size() < 2)
    return failure();
  std::optional<unsigned> reduced;
  for (linalg::GenericOp g : generics) {
    if (g.getNumReductionLoops() == 0)
      continue;
    std::optional<unsigned> loop = stageReducedLoop(g);
    if (reduced && loop != reduced)
      return failure();
    reduced = loop;
  }
  if (!reduced)
    return failure();
  row = *reduced;
  loopRanges = generics.front().getStaticLoopRanges();
  last = loopRanges.size() - 1;
  for (linalg::GenericOp g : generics)
    written.insert(rootOf(g.getDpsInits()[0]));
  // What comes before the first stage stays where it is.
  auto first = llvm::find_if(chainOps, [&](Operation *op) {
    return isa<linalg::GenericOp>(op) || isFillStage(op);
  });
  chainOps.erase(chainOps.begin(), first);
  return checkAccesses();
}

bool ReductionChain::isFillStage(Operation *op) const {
  auto fill = dyn_cast<linalg::FillOp>(op);
  return fill && fill.hasPureBufferSemantics() &&
         written.contains(rootOf(fill.getDpsInits()[0]));
}

/// Every buffer the chain writes is a buffer of its own, reached only
/// through that value, row by row; what the chain reads is of buffers of
/// their own too (so nothing else aliases what it writes); fills between
/// stages fill only what the chain writes.
LogicalResult ReductionChain::checkAccesses() const {
  for (linalg::GenericOp g : generics)
    for (OpOperand &operand : g->getOpOperands()) {
      if (!isa<MemRefType>(operand.get().getType()))
        continue;
      Value root = rootOf(operand.get());
      if (!isOwnBuffer(root) ||
          (written.contains(root) &&
           (root != operand.get() || !isRowLocal(g.getMatchingIndexingMap(&operand), row))))
        return failure();
    }
  for (Operation *op : chainOps)
    if (auto fill = dyn_cast<linalg::FillOp>(op);
        fill && (!isFillStage(op) || rootOf(fill.getDpsInits()[0]) != fill.getDpsInits()[0]))
      return failure();
  return success();
}

SmallVector<memref::AllocOp> ReductionChain::temporaries() const {
  SmallVector<memref::AllocOp> temporaries;
  // Only the stages: a view of a buffer (even one between them) may be
  // read after the chain.
  llvm::SmallPtrSet<Operation *, 16> stages;
  for (Operation *op : chainOps)
    if (isa<linalg::GenericOp, linalg::FillOp>(op))
      stages.insert(op);
  for (Value root : written) {
    auto alloc = root.getDefiningOp<memref::AllocOp>();
    if (!alloc)
      continue;
    MemRefType type = alloc.getType();
    if (!type.getLayout().isIdentity() || !type.getElementType().isIntOrFloat())
      continue;
    bool onlyChain = llvm::all_of(alloc->getUsers(), [&](Operation *user) {
      return stages.contains(user) || isa<memref::DeallocOp>(user);
    });
    if (onlyChain)
      temporaries.push_back(alloc);
  }
  return temporaries;
}

Value ReductionChain::sharedOutput(Value temporary, ArrayRef<memref::AllocOp> temporaries,
                                   const llvm::SmallPtrSetImpl<Value> &shared) const {
  auto it = llvm::find_if(llvm::reverse(generics), [&](linalg::GenericOp g) {
    return llvm::is_contained(g->getOperands(), temporary);
  });
  if (it == generics.rend())
    return {};
  linalg::GenericOp stage = *it;
  if (stage.getNumReductionLoops() != 0)
    return {};
  OpOperand *init = stage.getDpsInitOperand(0);
  Value out = init->get();
  if (out == temporary || out.getType() != temporary.getType() || shared.contains(out) ||
      llvm::any_of(temporaries, [&](memref::AllocOp t) { return t.getResult() == out; }))
    return {};
  for (OpOperand *in : stage.getDpsInputOperands())
    if (in->get() == out || (in->get() == temporary && stage.getMatchingIndexingMap(in) !=
                                                           stage.getMatchingIndexingMap(init)))
      return {};
  for (Operation *op : chainOps) {
    if (op == stage)
      return out;
    if (llvm::is_contained(op->getOperands(), out))
      return {};
  }
  return {};
}

SmallVector<Operation *> ReductionChain::moveOutOfTheWay(RewriterBase &rewriter) const {
  Operation *start = chainOps.front();
  SmallVector<Operation *> after;
  for (Operation *op : chainOps) {
    if (isa<memref::DeallocOp>(op))
      after.push_back(op);
    else if (!isa<linalg::GenericOp, linalg::FillOp>(op) && op != start)
      rewriter.moveOpBefore(op, start);
  }
  return after;
}

void ReductionChain::eraseStages(RewriterBase &rewriter) const {
  for (Operation *op : chainOps)
    if (isa<linalg::GenericOp, linalg::FillOp>(op))
      rewriter.eraseOp(op);
}

void ReductionChain::appendDeallocations(memref::AllocOp temporary,
                                         SmallVectorImpl<Operation *> &erased) {
  for (Operation *user : temporary->getUsers())
    if (isa<memref::DeallocOp>(user))
      erased.push_back(user);
}

} // namespace kiln
