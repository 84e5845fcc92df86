//===- CpuRowKernels.cpp - the kiln-cpu-row-kernels pass -----------------===//
//
// A softmax, log_softmax, layer_norm or rms_norm reaches the CPU as several
// linalg ops over the same rows: reductions over the innermost loop (a
// row's max, sum, sum of squares) and elementwise ops that read them, each
// a pass over the whole tensor through temporaries as large as the input (a
// 4096^2 softmax wrote and read 64 MiB of exponentials). This pass runs such
// a chain as one parallel loop over the rows that takes each row through
// every stage in turn: later stages find the row in the cache, and a
// temporary that only the chain uses shrinks to one row on the stack. The
// stages stay linalg ops on the row (rank-reduced subviews) for
// kiln-vectorize; the loop carries kiln.min_task_size, which tells
// kiln-cpu-flatten-parallel-loops to split it, not the stages' loops.
//
// A chain is a run of ops in one block: generics over the same outer
// (parallel) loop ranges and row, each a row reduction or elementwise, with
// only fills, allocations, deallocations and pure ops between them. Every
// buffer the chain writes is accessed by it row by row (its leading dims
// indexed by the outer loops in order), so each row reads what it read
// when every stage ran over all rows before the next.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/CPU/Passes.h"
#include "kiln/Lowering/Common/RowReduction.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/SetVector.h"

namespace kiln {
#define GEN_PASS_DEF_KILNCPUROWKERNELS
#include "kiln/Lowering/CPU/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

using kiln::RangeKey;

/// Per-row temporaries on the stack together at most this large: a pool
/// thread's stack holds them (a row of 4096 f32 is 16 KiB).
constexpr int64_t kMaxRowTemporaryBytes = 64 * 1024;
/// Their alignment in bytes: a cache line.
constexpr int64_t kRowTemporaryAlignment = 64;

/// The buffer that `v` is a view of (itself if none).
Value rootOf(Value v) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>())
    v = view.getViewSource();
  return v;
}

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

/// Whether `map` indexes a buffer row by row: its results are the outer
/// loops in order, then the row loop or nothing.
bool isRowLocal(AffineMap map) {
  unsigned outer = map.getNumDims() - 1;
  if (map.getNumResults() != outer && map.getNumResults() != outer + 1)
    return false;
  for (auto [i, e] : llvm::enumerate(map.getResults()))
    if (e != getAffineDimExpr(i, map.getContext()))
      return false;
  return true;
}

/// Whether `op` can be a stage: a row reduction kiln-vectorize takes, or an
/// elementwise op writing in iteration order, with a scalar body and maps
/// that pick loops (no constants, no loop twice).
bool isStage(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInits() != 1 || op.getNumLoops() < 2 ||
      !kiln::hasScalarBody(op) ||
      !llvm::all_of(op.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isProjectedPermutation(); }))
    return false;
  if (kiln::matchRowReduction(op))
    return true;
  return op.getNumParallelLoops() == op.getNumLoops() &&
         op.getMatchingIndexingMap(op.getDpsInitOperand(0)).isIdentity();
}

/// Ops that may sit between stages: the loop takes them out of its way
/// (pure ops and allocations before it, deallocations after it).
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
          RangeKey key = kiln::rangeKey(operand.get(), p);
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
    return llvm::map_to_vector(kiln::loopKeys(op), [&](const RangeKey &key) {
      return classes.contains(key) ? classes.getLeaderValue(key) : key;
    });
  }

private:
  llvm::EquivalenceClasses<RangeKey> classes;
};

/// A chain of stages and the fills and movable ops between them.
class Chain {
public:
  explicit Chain(SmallVector<Operation *> ops) : ops(std::move(ops)) {}

  /// The rows, where all of the outer loops are static.
  std::optional<int64_t> staticRows() {
    int64_t rows = 1;
    SmallVector<int64_t> ranges = generics.front().getStaticLoopRanges();
    for (int64_t size : ArrayRef(ranges).drop_back()) {
      if (ShapedType::isDynamic(size))
        return std::nullopt;
      rows *= size;
    }
    return rows;
  }

  /// Checks the chain and rewrites it into one loop over rows, where it
  /// has at least `threads` rows (checked at run time where the number of
  /// rows is known only then).
  LogicalResult run(IRRewriter &rewriter, int64_t threads,
                    SmallVectorImpl<Operation *> &erased) {
    for (Operation *op : ops)
      if (auto g = dyn_cast<linalg::GenericOp>(op))
        generics.push_back(g);
    if (generics.size() < 2 ||
        llvm::none_of(generics, [](linalg::GenericOp g) { return g.getNumReductionLoops() > 0; }))
      return failure();
    minRows = std::max<int64_t>(threads, 2);
    if (std::optional<int64_t> rows = staticRows(); rows && *rows < minRows)
      return failure();
    outer = generics.front().getNumLoops() - 1;
    for (linalg::GenericOp g : generics)
      written.insert(rootOf(g.getDpsInits()[0]));
    // What comes before the first stage stays where it is.
    auto first = llvm::find_if(ops, [&](Operation *op) {
      return isa<linalg::GenericOp>(op) || isFillStage(op);
    });
    ops.erase(ops.begin(), first);
    if (failed(checkAccesses()))
      return failure();
    rewrite(rewriter, erased);
    return success();
  }

private:
  /// Whether `op` is a fill of what the chain writes (its initial values).
  bool isFillStage(Operation *op) {
    auto fill = dyn_cast<linalg::FillOp>(op);
    return fill && fill.hasPureBufferSemantics() &&
           written.contains(rootOf(fill.getDpsInits()[0]));
  }

  /// Every buffer the chain writes is a buffer of its own, reached only
  /// through that value, row by row; what the chain reads is of buffers of
  /// their own too (so nothing else aliases what it writes); fills between
  /// stages fill only what the chain writes.
  LogicalResult checkAccesses() {
    for (linalg::GenericOp g : generics)
      for (OpOperand &operand : g->getOpOperands()) {
        if (!isa<MemRefType>(operand.get().getType()))
          continue;
        Value root = rootOf(operand.get());
        if (!isOwnBuffer(root) ||
            (written.contains(root) &&
             (root != operand.get() || !isRowLocal(g.getMatchingIndexingMap(&operand)))))
          return failure();
      }
    for (Operation *op : ops)
      if (auto fill = dyn_cast<linalg::FillOp>(op);
          fill && (!isFillStage(op) || rootOf(fill.getDpsInits()[0]) != fill.getDpsInits()[0]))
        return failure();
    return success();
  }

  /// Allocations only the chain uses (and deallocates), of a static row
  /// shape: they become a row on the stack in the loop.
  SmallVector<memref::AllocOp> rowTemporaries() {
    SmallVector<memref::AllocOp> temporaries;
    int64_t bytes = 0;
    // Only the stages: a view of a buffer (even one between them) may be
    // read after the chain.
    llvm::SmallPtrSet<Operation *, 16> stages;
    for (Operation *op : ops)
      if (isa<linalg::GenericOp, linalg::FillOp>(op))
        stages.insert(op);
    for (Value root : written) {
      auto alloc = root.getDefiningOp<memref::AllocOp>();
      if (!alloc)
        continue;
      MemRefType type = alloc.getType();
      if (!type.getLayout().isIdentity() || !type.getElementType().isIntOrFloat() ||
          (type.getRank() == outer + 1 && type.isDynamicDim(outer)))
        continue;
      bool onlyChain = llvm::all_of(alloc->getUsers(), [&](Operation *user) {
        return stages.contains(user) || isa<memref::DeallocOp>(user);
      });
      if (!onlyChain)
        continue;
      // kiln keeps a bool in a byte.
      int64_t rowBytes = (type.getRank() == outer ? 1 : type.getDimSize(outer)) *
                         std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
      if (bytes + rowBytes > kMaxRowTemporaryBytes)
        continue;
      bytes += rowBytes;
      temporaries.push_back(alloc);
    }
    return temporaries;
  }

  /// The map from the row loop into a row view of a buffer that `map`
  /// indexes: the row, or nothing (a scalar of the row).
  static AffineMap rowMap(AffineMap map) {
    MLIRContext *ctx = map.getContext();
    bool hasRow =
        llvm::is_contained(map.getResults(), getAffineDimExpr(map.getNumDims() - 1, ctx));
    return hasRow ? AffineMap::get(1, 0, getAffineDimExpr(0, ctx))
                  : AffineMap::get(1, 0, ArrayRef<AffineExpr>{}, ctx);
  }

  /// `buffer` at the row of outer indices `ivs` as `map` indexes it: a view
  /// without the outer dims (a row, or a scalar).
  Value rowView(OpBuilder &b, Location loc, Value buffer, AffineMap map,
                ArrayRef<OpFoldResult> ivs) {
    auto type = cast<MemRefType>(buffer.getType());
    SmallVector<OpFoldResult> offsets, sizes, strides;
    SmallVector<int64_t> rowShape;
    for (auto [d, e] : llvm::enumerate(map.getResults())) {
      unsigned loop = cast<AffineDimExpr>(e).getPosition();
      strides.push_back(b.getIndexAttr(1));
      if (loop < outer) {
        offsets.push_back(ivs[loop]);
        sizes.push_back(b.getIndexAttr(1));
        continue;
      }
      offsets.push_back(b.getIndexAttr(0));
      sizes.push_back(memref::getMixedSize(b, loc, buffer, d));
      rowShape.push_back(type.getDimSize(d));
    }
    auto viewType = memref::SubViewOp::inferRankReducedResultType(rowShape, type, offsets,
                                                                  sizes, strides);
    return memref::SubViewOp::create(b, loc, cast<MemRefType>(viewType), buffer, offsets,
                                     sizes, strides);
  }

  /// Rewrites the chain. The temporaries and their deallocations (which a
  /// later chain of the block may hold) go into `erased`, to be erased in
  /// order once the block is done.
  void rewrite(IRRewriter &rewriter, SmallVectorImpl<Operation *> &erased) {
    linalg::GenericOp first = generics.front();
    Location loc = first.getLoc();
    Operation *start = ops.front();
    // Pure ops and allocations go before the loop, deallocations after it.
    SmallVector<Operation *> after;
    for (Operation *op : ops) {
      if (isa<memref::DeallocOp>(op))
        after.push_back(op);
      else if (!isa<linalg::GenericOp, linalg::FillOp>(op) && op != start)
        rewriter.moveOpBefore(op, start);
    }
    SmallVector<memref::AllocOp> temporaries = rowTemporaries();

    MLIRContext *ctx = rewriter.getContext();
    rewriter.setInsertionPoint(start);
    SmallVector<Value> lbs, ubs, steps;
    SmallVector<std::pair<Value, int64_t>> sources = kiln::loopSources(first);
    SmallVector<int64_t> ranges = first.getStaticLoopRanges();
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    for (int64_t d = 0; d < outer; ++d) {
      // A dim of one is no loop: the canonicalizer would drop it and with
      // it the loop's attributes.
      if (ranges[d] == 1)
        continue;
      lbs.push_back(zero);
      // An allocation's own size, not a memref.dim of it: it may be a
      // temporary that goes.
      auto [buffer, dim] = sources[d];
      auto alloc = buffer.getDefiningOp<memref::AllocOp>();
      auto type = cast<MemRefType>(buffer.getType());
      ubs.push_back(alloc && type.isDynamicDim(dim)
                        ? alloc.getDynamicSizes()[type.getDynamicDimIndex(dim)]
                        : kiln::loopSize(rewriter, loc, sources[d]));
      steps.push_back(one);
    }
    // A run-time number of rows: too few of them run the stages one after
    // the other as before, each over all rows, so that the elementwise
    // stages still use every thread.
    scf::IfOp guard;
    if (!staticRows()) {
      Value count = ubs.front();
      for (Value ub : llvm::drop_begin(ubs))
        count = arith::MulIOp::create(rewriter, loc, count, ub);
      Value enough = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::uge, count,
                                           arith::ConstantIndexOp::create(rewriter, loc, minRows));
      guard = scf::IfOp::create(rewriter, loc, enough, /*withElseRegion=*/true);
      rewriter.setInsertionPoint(guard.thenBlock()->getTerminator());
    }
    auto rows = scf::ParallelOp::create(rewriter, loc, lbs, ubs, steps);
    // Each row is a task's worth of work on its own.
    rows->setAttr(kiln::kMinTaskSizeAttr, rewriter.getIndexAttr(1));
    rewriter.setInsertionPoint(rows.getBody()->getTerminator());
    SmallVector<OpFoldResult> ivs;
    for (int64_t d = 0, loop = 0; d < outer; ++d)
      ivs.push_back(ranges[d] == 1 ? OpFoldResult(rewriter.getIndexAttr(0))
                                   : OpFoldResult(rows.getInductionVars()[loop++]));

    // A temporary's row on the stack, freed at the end of the row (the
    // stack pointer restored, as memref.alloca_scope would; its region
    // would have to stay one block through scf-to-cf).
    DenseMap<Value, Value> stackRows;
    Value stack;
    if (!temporaries.empty())
      stack = LLVM::StackSaveOp::create(rewriter, loc, LLVM::LLVMPointerType::get(ctx));
    for (memref::AllocOp alloc : temporaries) {
      MemRefType type = alloc.getType();
      SmallVector<int64_t> shape;
      if (type.getRank() == outer + 1)
        shape.push_back(type.getDimSize(outer));
      // Aligned as buffers are (kiln-vectorize's accesses rely on 16 bytes).
      stackRows[alloc.getResult()] = memref::AllocaOp::create(
          rewriter, loc, MemRefType::get(shape, type.getElementType()),
          rewriter.getI64IntegerAttr(kRowTemporaryAlignment));
    }
    auto viewAt = [&](Value buffer, AffineMap map) {
      if (!isa<MemRefType>(buffer.getType())) // a scalar operand
        return buffer;
      if (auto it = stackRows.find(buffer); it != stackRows.end())
        return it->second;
      return rowView(rewriter, loc, buffer, map, ivs);
    };
    for (Operation *op : ops) {
      if (auto fill = dyn_cast<linalg::FillOp>(op)) {
        Value out = fill.getDpsInits()[0];
        int64_t rank = cast<MemRefType>(out.getType()).getRank();
        AffineMap map = AffineMap::getMultiDimIdentityMap(outer + 1, ctx).getMajorSubMap(rank);
        Value view = viewAt(out, map);
        auto row = cast<linalg::FillOp>(rewriter.clone(*fill));
        row.getDpsInitsMutable()[0].set(view);
        continue;
      }
      auto g = dyn_cast<linalg::GenericOp>(op);
      if (!g)
        continue;
      SmallVector<Value> operands;
      SmallVector<AffineMap> maps;
      for (OpOperand &operand : g->getOpOperands()) {
        AffineMap map = g.getMatchingIndexingMap(&operand);
        operands.push_back(viewAt(operand.get(), map));
        maps.push_back(rowMap(map));
      }
      auto row = cast<linalg::GenericOp>(rewriter.clone(*g));
      row->setOperands(operands);
      row.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(maps));
      row.setIteratorTypesAttr(rewriter.getArrayAttr(
          {linalg::IteratorTypeAttr::get(ctx, g.getIteratorTypesArray().back())}));
    }
    if (stack)
      LLVM::StackRestoreOp::create(rewriter, loc, stack);

    // Too few rows run the stages as they were, over all rows, with the
    // temporaries in full.
    if (guard) {
      rewriter.setInsertionPoint(guard.elseBlock()->getTerminator());
      for (memref::AllocOp alloc : temporaries)
        rewriter.moveOpBefore(alloc, guard.elseBlock()->getTerminator());
      for (Operation *op : ops)
        if (isa<linalg::GenericOp, linalg::FillOp>(op))
          rewriter.clone(*op);
    }
    for (Operation *op : ops)
      if (isa<linalg::GenericOp, linalg::FillOp>(op))
        rewriter.eraseOp(op);
    for (memref::AllocOp alloc : temporaries) {
      for (Operation *user : alloc->getUsers())
        if (isa<memref::DeallocOp>(user))
          erased.push_back(user);
      if (guard)
        memref::DeallocOp::create(rewriter, alloc.getLoc(), alloc);
      else
        erased.push_back(alloc);
    }
    Operation *loop = guard ? guard.getOperation() : rows.getOperation();
    for (Operation *op : llvm::reverse(after))
      rewriter.moveOpAfter(op, loop);
  }

  SmallVector<Operation *> ops;
  SmallVector<linalg::GenericOp> generics;
  llvm::SetVector<Value> written;
  int64_t outer = 0;
  int64_t minRows = 2; // the fewest rows worth the loop over rows
};

/// The chains of `block`, each from its first op to its last stage.
SmallVector<Chain> chainsIn(Block &block, const EqualRanges &ranges) {
  SmallVector<Chain> chains;
  SmallVector<Operation *> window; // since the current chain's first stage
  SmallVector<RangeKey> keys;      // its stages' loop ranges
  size_t lastStage = 0;            // one past its last stage in `window`
  auto close = [&]() {
    window.resize(lastStage);
    if (!window.empty())
      chains.emplace_back(std::move(window));
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

struct KilnCpuRowKernelsPass : kiln::impl::KilnCpuRowKernelsBase<KilnCpuRowKernelsPass> {
  using KilnCpuRowKernelsBase::KilnCpuRowKernelsBase;
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<Block *> blocks;
    getOperation().walk([&](Block *block) { blocks.push_back(block); });
    for (Block *block : blocks) {
      SmallVector<Operation *> erased;
      for (Chain &chain : chainsIn(*block, EqualRanges(*block)))
        (void)chain.run(rewriter, threads, erased);
      for (Operation *op : erased)
        rewriter.eraseOp(op);
    }
  }
};

} // namespace
