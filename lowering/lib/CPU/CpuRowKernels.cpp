//===- CpuRowKernels.cpp - the kiln-cpu-row-kernels pass -----------------===//
//
// A softmax, log_softmax, layer_norm or rms_norm reaches the CPU as several
// linalg ops over the same rows: reductions over one loop (a row's max,
// sum, sum of squares) and elementwise ops that read them, each a pass over
// the whole tensor through temporaries as large as the input (a 4096^2
// softmax wrote and read 64 MiB of exponentials). This pass runs such a
// chain as one parallel loop that takes each row through every stage in
// turn: later stages find the row in the cache, and a temporary that only
// the chain uses shrinks to one row, or lives in the output's row where the
// stage that reads it last writes the output. The stages stay linalg ops on
// the row (rank-reduced subviews) for kiln-vectorize; the loop carries
// kiln.min_task_size, which tells kiln-cpu-flatten-parallel-loops to split
// it, not the stages' loops.
//
// The reduced loop is the innermost (a row chain: a softmax over the last
// dim) or an outer one with parallel loops inside it (a column chain: a
// softmax over dim 0, or over the channels of an NCHW image). A column
// chain's "row" is a slab: every iteration of the reduced loop times a
// block of the innermost loop's columns, wide enough for whole cache lines
// and narrow enough that a slab of each buffer stays in L2 from one stage
// to the next. Where every buffer holds the loops inside the reduced one
// as its last dims, contiguous, they are one row of columns (an NCHW
// image's H and W), so that slabs are as wide there as over dim 0.
//
// kiln::ReductionChain (lowering/lib/Common/ReductionChain.cpp) finds the
// chains and checks that every buffer they write is accessed slab by slab,
// so each slab reads what it read when every stage ran over all of them
// before the next.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/CPU/Passes.h"
#include "kiln/Lowering/Common/ReductionChain.h"
#include "kiln/Lowering/Common/RowReduction.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace kiln {
#define GEN_PASS_DEF_KILNCPUROWKERNELS
#include "kiln/Lowering/CPU/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// Per-row temporaries on the stack together at most this large: a pool
/// thread's stack holds them (a row of 4096 f32 is 16 KiB). Larger ones
/// are allocated for each row.
constexpr int64_t kMaxRowTemporaryBytes = 64 * 1024;
/// Their alignment in bytes: a cache line.
constexpr int64_t kRowTemporaryAlignment = 64;
/// A column chain's slab of one buffer: about this many bytes (a slab of
/// the input, of the output and of a temporary stay in L2 together), at
/// most kMaxColumnSlabBytes, its rows a whole number of cache lines, at
/// least kMinSlabRowBytes (narrower rows each cost a TLB miss and a new
/// prefetch stream) and at most 8 KiB (what kiln-vectorize's outer
/// reductions take a step). Softmax over dim 0 of 2^24 f32 on a 2-core
/// Zen 5 (1 MiB L2) with 21 to 4096 rows: docs/benchmarks-cpu.md.
constexpr int64_t kColumnSlabBytes = 128 * 1024;
constexpr int64_t kMaxColumnSlabBytes = 256 * 1024;
constexpr int64_t kMinSlabRowBytes = 256;
constexpr int64_t kMaxSlabRowBytes = 8192;
constexpr int64_t kCacheLineBytes = 64;

/// A chain as kiln-cpu-row-kernels runs it: one loop over rows or slabs.
class Chain {
public:
  explicit Chain(kiln::ReductionChain chain) : chain(std::move(chain)) {}

  /// Checks the chain and rewrites it into one loop over rows (a column
  /// chain's slabs), where it has at least `threads` of them (checked at
  /// run time where their number is known only then).
  LogicalResult run(IRRewriter &rewriter, int64_t threads,
                    SmallVectorImpl<Operation *> &erased) {
    if (failed(chain.analyze()))
      return failure();
    ops = llvm::to_vector(chain.ops());
    generics = llvm::to_vector(chain.stages());
    row = chain.reducedLoop();
    last = chain.innermostLoop();
    ranges = llvm::to_vector(chain.ranges());
    columnsFrom = last;
    if (isColumnChain() && collapsibleColumns()) {
      columnsFrom = row + 1;
      for (unsigned d = columnsFrom; d < last; ++d)
        ranges[last] = ShapedType::isDynamic(ranges[d]) || ShapedType::isDynamic(ranges[last])
                           ? ShapedType::kDynamic
                           : ranges[d] * ranges[last];
    }
    if (isColumnChain() && (slabColumns = chooseSlabColumns(threads)) == 0)
      return failure();
    minRows = std::max<int64_t>(threads, 2);
    if (std::optional<int64_t> rows = staticRows(); rows && *rows < minRows)
      return failure();
    rewrite(rewriter, erased);
    return success();
  }

private:
  bool isColumnChain() const { return row != last; }
  /// Whether loop `d` is one of those a column chain's columns collapse.
  bool isCollapsedColumn(int64_t d) const { return d >= columnsFrom && d < last; }

  /// Whether every buffer the stages and fills access holds either none of
  /// the loops inside the reduced one or all of them, as its last dims in
  /// order and in an identity layout (contiguous): they then collapse into
  /// one dim of columns.
  bool collapsibleColumns() {
    auto holdsInner = [&](AffineMap map, MemRefType type) {
      SmallVector<unsigned> inner;
      for (AffineExpr e : map.getResults())
        if (unsigned d = cast<AffineDimExpr>(e).getPosition(); d > row)
          inner.push_back(d);
      if (inner.empty())
        return true;
      unsigned count = last - row;
      if (!type.getLayout().isIdentity() || inner.size() != count)
        return false;
      for (unsigned i = 0; i < count; ++i)
        if (map.getDimPosition(map.getNumResults() - count + i) != row + 1 + i)
          return false;
      return true;
    };
    AffineMap identity = AffineMap::getMultiDimIdentityMap(last + 1, generics.front().getContext());
    for (Operation *op : ops) {
      if (auto fill = dyn_cast<linalg::FillOp>(op)) {
        auto type = cast<MemRefType>(fill.getDpsInits()[0].getType());
        if (!holdsInner(type.getRank() == static_cast<int64_t>(last) + 1 ? identity
                                                                         : identity.dropResult(row),
                        type))
          return false;
        continue;
      }
      if (auto g = dyn_cast<linalg::GenericOp>(op))
        for (OpOperand &operand : g->getOpOperands())
          if (auto type = dyn_cast<MemRefType>(operand.get().getType());
              type && !holdsInner(g.getMatchingIndexingMap(&operand), type))
            return false;
    }
    return true;
  }

  /// The widest element the stages touch, in bytes (kiln keeps a bool in a
  /// byte).
  int64_t elementBytes() {
    int64_t bytes = 1;
    for (linalg::GenericOp g : generics)
      for (Value v : g->getOperands())
        if (auto type = dyn_cast<MemRefType>(v.getType()))
          bytes = std::max<int64_t>(bytes, type.getElementTypeBitWidth() / 8);
    return bytes;
  }

  /// The columns of a column chain's slab, in whole cache lines: as many
  /// as kColumnSlabBytes of its rows allow, from kMinSlabRowBytes to
  /// kMaxSlabRowBytes, fewer where that leaves some of the `threads`
  /// without a slab; all of the columns where fewer, else a width that
  /// divides them where one is at least half as wide (every slab then of
  /// one static shape). 0 (no chain) where the rows are not static, or so
  /// many that a slab of the narrowest rows outgrows kMaxColumnSlabBytes.
  int64_t chooseSlabColumns(int64_t threads) {
    int64_t rows = ranges[row], columns = ranges[last];
    if (ShapedType::isDynamic(rows) || rows == 0 || columns == 0)
      return 0;
    int64_t bytes = elementBytes();
    int64_t line = std::max<int64_t>(1, kCacheLineBytes / bytes);
    int64_t narrowest = std::max(line, kMinSlabRowBytes / bytes);
    if (!ShapedType::isDynamic(columns))
      narrowest = std::min(narrowest, columns);
    if (rows * narrowest * bytes > kMaxColumnSlabBytes)
      return 0;
    int64_t width = std::clamp(kColumnSlabBytes / (rows * bytes) / line * line, narrowest,
                               std::max(narrowest, kMaxSlabRowBytes / bytes));
    if (ShapedType::isDynamic(columns))
      return width;
    int64_t others = 1;
    for (int64_t d = 0; d < static_cast<int64_t>(last); ++d)
      if (d != row && !isCollapsedColumn(d))
        others *= ShapedType::isDynamic(ranges[d]) ? threads : ranges[d];
    if (others < threads) {
      int64_t share = columns / static_cast<int64_t>(llvm::divideCeil(threads, others));
      width = std::max(narrowest, std::min(width, share / line * line));
    }
    if (columns <= width)
      return columns;
    for (int64_t w = width; 2 * w >= width; w -= line)
      if (columns % w == 0)
        return w;
    return width;
  }

  /// Iterations of loop `d` of the loop over rows (a column chain's
  /// columns: its slabs), where static.
  int64_t trips(int64_t d) {
    if (isCollapsedColumn(d))
      return 1;
    if (ShapedType::isDynamic(ranges[d]) || d != last || !isColumnChain())
      return ranges[d];
    return llvm::divideCeil(ranges[d], slabColumns);
  }

  /// The rows (slabs), where static.
  std::optional<int64_t> staticRows() {
    int64_t rows = 1;
    for (int64_t d = 0; d <= last; ++d) {
      if (d == row)
        continue;
      if (ShapedType::isDynamic(trips(d)))
        return std::nullopt;
      rows *= trips(d);
    }
    return rows;
  }

  /// The static shape of one row (slab) of a buffer the chain writes:
  /// the reduced loop's dim where it has one, then a column chain's
  /// columns.
  SmallVector<int64_t> rowShape(MemRefType type) {
    SmallVector<int64_t> shape;
    if (type.getRank() == static_cast<int64_t>(last) + 1)
      shape.push_back(type.getDimSize(row));
    if (isColumnChain())
      shape.push_back(slabColumns);
    return shape;
  }

  /// The chain's temporaries of a static row shape: they shrink to a row.
  SmallVector<memref::AllocOp> rowTemporaries() {
    SmallVector<memref::AllocOp> temporaries = chain.temporaries();
    llvm::erase_if(temporaries, [&](memref::AllocOp alloc) {
      return llvm::any_of(rowShape(alloc.getType()), ShapedType::isDynamic);
    });
    return temporaries;
  }

  /// The map from a row's loops (the reduced loop, then a column chain's
  /// columns) into the view rowView makes of a buffer that `map` indexes.
  AffineMap rowMap(AffineMap map) {
    MLIRContext *ctx = map.getContext();
    SmallVector<AffineExpr> results;
    for (AffineExpr e : map.getResults()) {
      unsigned loop = cast<AffineDimExpr>(e).getPosition();
      if (loop == row)
        results.push_back(getAffineDimExpr(0, ctx));
      else if (loop == last)
        results.push_back(getAffineDimExpr(1, ctx));
    }
    return AffineMap::get(isColumnChain() ? 2 : 1, 0, results, ctx);
  }

  /// `buffer` at the row of loop indices `ivs` (a column chain's first
  /// column of the slab at `last`, `columns` of them) as `map` indexes it:
  /// a view without the other loops' dims.
  Value rowView(OpBuilder &b, Location loc, Value buffer, AffineMap map,
                ArrayRef<OpFoldResult> ivs, OpFoldResult columns) {
    if (columnsFrom != last && map.isFunctionOfDim(last)) {
      buffer = collapsedBuffers.lookup(buffer);
      SmallVector<int64_t> inner;
      for (auto [i, e] : llvm::enumerate(map.getResults()))
        if (isCollapsedColumn(cast<AffineDimExpr>(e).getPosition()))
          inner.push_back(i);
      map = map.dropResults(inner);
    }
    auto type = cast<MemRefType>(buffer.getType());
    SmallVector<OpFoldResult> offsets, sizes, strides;
    SmallVector<int64_t> shape;
    for (auto [d, e] : llvm::enumerate(map.getResults())) {
      unsigned loop = cast<AffineDimExpr>(e).getPosition();
      strides.push_back(b.getIndexAttr(1));
      if (loop == row) {
        offsets.push_back(b.getIndexAttr(0));
        sizes.push_back(memref::getMixedSize(b, loc, buffer, d));
        shape.push_back(type.getDimSize(d));
      } else if (loop == last) {
        offsets.push_back(ivs[loop]);
        sizes.push_back(columns);
        shape.push_back(getConstantIntValue(columns).value_or(ShapedType::kDynamic));
      } else {
        offsets.push_back(ivs[loop]);
        sizes.push_back(b.getIndexAttr(1));
      }
    }
    auto viewType =
        memref::SubViewOp::inferRankReducedResultType(shape, type, offsets, sizes, strides);
    return memref::SubViewOp::create(b, loc, cast<MemRefType>(viewType), buffer, offsets,
                                     sizes, strides);
  }

  /// Collapses the columns of the buffers that rowView will view, but the
  /// temporaries (their rows are buffers of their own), into one dim each.
  void collapseColumns(OpBuilder &b, Location loc, ArrayRef<memref::AllocOp> temporaries) {
    if (columnsFrom == last)
      return;
    auto collapse = [&](Value buffer, AffineMap map) {
      if (!map.isFunctionOfDim(last) || collapsedBuffers.contains(buffer) ||
          llvm::any_of(temporaries, [&](memref::AllocOp t) { return t.getResult() == buffer; }))
        return;
      int64_t rank = cast<MemRefType>(buffer.getType()).getRank();
      int64_t inner = last - row;
      SmallVector<ReassociationIndices> dims;
      for (int64_t d = 0; d < rank - inner; ++d)
        dims.push_back({d});
      dims.push_back(llvm::to_vector(llvm::seq<int64_t>(rank - inner, rank)));
      collapsedBuffers[buffer] = memref::CollapseShapeOp::create(b, loc, buffer, dims);
    };
    AffineMap identity = AffineMap::getMultiDimIdentityMap(last + 1, b.getContext());
    for (Operation *op : ops) {
      if (auto fill = dyn_cast<linalg::FillOp>(op)) {
        Value out = fill.getDpsInits()[0];
        collapse(out, cast<MemRefType>(out.getType()).getRank() == static_cast<int64_t>(last) + 1
                          ? identity
                          : identity.dropResult(row));
      } else if (auto g = dyn_cast<linalg::GenericOp>(op)) {
        for (OpOperand &operand : g->getOpOperands())
          if (isa<MemRefType>(operand.get().getType()))
            collapse(operand.get(), g.getMatchingIndexingMap(&operand));
      }
    }
  }

  /// Rewrites the chain. The temporaries and their deallocations (which a
  /// later chain of the block may hold) go into `erased`, to be erased in
  /// order once the block is done.
  void rewrite(IRRewriter &rewriter, SmallVectorImpl<Operation *> &erased) {
    linalg::GenericOp first = generics.front();
    Location loc = first.getLoc();
    Operation *start = ops.front();
    SmallVector<Operation *> after = chain.moveOutOfTheWay(rewriter);
    SmallVector<memref::AllocOp> temporaries = rowTemporaries();

    MLIRContext *ctx = rewriter.getContext();
    rewriter.setInsertionPoint(start);
    SmallVector<Value> lbs, ubs, steps;
    SmallVector<int64_t> loopDims;
    SmallVector<std::pair<Value, int64_t>> sources = kiln::loopSources(first);
    auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(rewriter, loc, v); };
    // An allocation's own size, not a memref.dim of it: it may be a
    // temporary that goes.
    auto loopSize = [&](int64_t d) -> Value {
      auto [buffer, dim] = sources[d];
      auto alloc = buffer.getDefiningOp<memref::AllocOp>();
      auto type = cast<MemRefType>(buffer.getType());
      return alloc && type.isDynamicDim(dim)
                 ? alloc.getDynamicSizes()[type.getDynamicDimIndex(dim)]
                 : kiln::loopSize(rewriter, loc, sources[d]);
    };
    Value zero = c(0), one = c(1), columnCount;
    for (int64_t d = 0; d <= last; ++d) {
      // A dim of one is no loop: the canonicalizer would drop it and with
      // it the loop's attributes.
      if (d == row || trips(d) == 1)
        continue;
      Value size = loopSize(d);
      if (d == last && isColumnChain()) {
        for (int64_t inner = columnsFrom; inner < last; ++inner)
          size = arith::MulIOp::create(rewriter, loc, loopSize(inner), size);
        columnCount = size;
        size = ShapedType::isDynamic(trips(d))
                   ? arith::CeilDivUIOp::create(rewriter, loc, size, c(slabColumns)).getResult()
                   : c(trips(d));
      }
      lbs.push_back(zero);
      ubs.push_back(size);
      steps.push_back(one);
      loopDims.push_back(d);
    }
    collapseColumns(rewriter, loc, temporaries);
    // A run-time number of rows: too few of them run the stages one after
    // the other as before, each over all rows, so that the elementwise
    // stages still use every thread.
    scf::IfOp guard;
    if (!staticRows()) {
      Value count = ubs.front();
      for (Value ub : llvm::drop_begin(ubs))
        count = arith::MulIOp::create(rewriter, loc, count, ub);
      Value enough = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::uge, count,
                                           c(minRows));
      guard = scf::IfOp::create(rewriter, loc, enough, /*withElseRegion=*/true);
      rewriter.setInsertionPoint(guard.thenBlock()->getTerminator());
    }
    auto rows = scf::ParallelOp::create(rewriter, loc, lbs, ubs, steps);
    // Each row is a task's worth of work on its own.
    rows->setAttr(kiln::kMinTaskSizeAttr, rewriter.getIndexAttr(1));
    rewriter.setInsertionPoint(rows.getBody()->getTerminator());
    SmallVector<OpFoldResult> ivs(last + 1, rewriter.getIndexAttr(0));
    for (auto [d, iv] : llvm::zip(loopDims, rows.getInductionVars()))
      ivs[d] = iv;
    // A column chain's slab: its first column and its width, narrower in
    // the last slab where the slabs do not divide the columns.
    OpFoldResult columns;
    bool narrowerLast = false;
    if (isColumnChain()) {
      columns = rewriter.getIndexAttr(slabColumns);
      if (auto slab = dyn_cast<Value>(ivs[last])) {
        Value firstColumn = arith::MulIOp::create(rewriter, loc, slab, c(slabColumns));
        ivs[last] = firstColumn;
        if (ShapedType::isDynamic(ranges[last]) || ranges[last] % slabColumns != 0) {
          Value left = arith::SubIOp::create(rewriter, loc, columnCount, firstColumn);
          columns = arith::MinUIOp::create(rewriter, loc, left, c(slabColumns)).getResult();
          narrowerLast = true;
        }
      }
    }

    // A temporary's row on the stack, freed at the end of the row (the
    // stack pointer restored, as memref.alloca_scope would; its region
    // would have to stay one block through scf-to-cf), or on the heap
    // past kMaxRowTemporaryBytes.
    DenseMap<Value, Value> rowsOf;
    SmallVector<Value> heapRows;
    Value stack;
    int64_t stackBytes = 0;
    llvm::SmallPtrSet<Value, 4> shared;
    AffineMap identity = AffineMap::getMultiDimIdentityMap(last + 1, ctx);
    for (memref::AllocOp alloc : temporaries) {
      if (Value out = chain.sharedOutput(alloc.getResult(), temporaries, shared)) {
        shared.insert(out);
        rowsOf[alloc.getResult()] = rowView(rewriter, loc, out, identity, ivs, columns);
        continue;
      }
      MemRefType type = alloc.getType();
      SmallVector<int64_t> shape = rowShape(type);
      auto rowType = MemRefType::get(shape, type.getElementType());
      int64_t bytes = rowType.getNumElements() *
                      std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
      // Aligned as buffers are (kiln-vectorize's accesses rely on 16 bytes).
      IntegerAttr alignment = rewriter.getI64IntegerAttr(kRowTemporaryAlignment);
      Value rowBuffer;
      if (stackBytes + bytes <= kMaxRowTemporaryBytes) {
        if (!stack)
          stack = LLVM::StackSaveOp::create(rewriter, loc, LLVM::LLVMPointerType::get(ctx));
        stackBytes += bytes;
        rowBuffer = memref::AllocaOp::create(rewriter, loc, rowType, alignment);
      } else {
        rowBuffer = memref::AllocOp::create(rewriter, loc, rowType, alignment);
        heapRows.push_back(rowBuffer);
      }
      if (narrowerLast) {
        SmallVector<OpFoldResult> offsets(shape.size(), rewriter.getIndexAttr(0)),
            strides(shape.size(), rewriter.getIndexAttr(1)),
            sizes = getAsIndexOpFoldResult(ctx, shape);
        sizes.back() = columns;
        rowBuffer = memref::SubViewOp::create(rewriter, loc, rowBuffer, offsets, sizes, strides);
      }
      rowsOf[alloc.getResult()] = rowBuffer;
    }
    auto viewAt = [&](Value buffer, AffineMap map) {
      if (!isa<MemRefType>(buffer.getType())) // a scalar operand
        return buffer;
      if (auto it = rowsOf.find(buffer); it != rowsOf.end())
        return it->second;
      return rowView(rewriter, loc, buffer, map, ivs, columns);
    };
    SmallVector<utils::IteratorType> columnIterators;
    if (isColumnChain())
      columnIterators.push_back(utils::IteratorType::parallel);
    for (Operation *op : ops) {
      if (auto fill = dyn_cast<linalg::FillOp>(op)) {
        Value out = fill.getDpsInits()[0];
        AffineMap map = cast<MemRefType>(out.getType()).getRank() == static_cast<int64_t>(last) + 1
                            ? identity
                            : identity.dropResult(row);
        Value view = viewAt(out, map);
        auto rowFill = cast<linalg::FillOp>(rewriter.clone(*fill));
        rowFill.getDpsInitsMutable()[0].set(view);
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
      auto rowStage = cast<linalg::GenericOp>(rewriter.clone(*g));
      rowStage->setOperands(operands);
      rowStage.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(maps));
      SmallVector<Attribute> iterators{
          linalg::IteratorTypeAttr::get(ctx, g.getIteratorTypesArray()[row])};
      for (utils::IteratorType t : columnIterators)
        iterators.push_back(linalg::IteratorTypeAttr::get(ctx, t));
      rowStage.setIteratorTypesAttr(rewriter.getArrayAttr(iterators));
    }
    for (Value heapRow : heapRows)
      memref::DeallocOp::create(rewriter, loc, heapRow);
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
    chain.eraseStages(rewriter);
    for (memref::AllocOp alloc : temporaries) {
      kiln::ReductionChain::appendDeallocations(alloc, erased);
      if (guard)
        memref::DeallocOp::create(rewriter, alloc.getLoc(), alloc);
      else
        erased.push_back(alloc);
    }
    Operation *loop = guard ? guard.getOperation() : rows.getOperation();
    for (Operation *op : llvm::reverse(after))
      rewriter.moveOpAfter(op, loop);
  }

  kiln::ReductionChain chain;
  SmallVector<Operation *> ops;            // the chain's, once analysed
  SmallVector<linalg::GenericOp> generics; // its stages
  SmallVector<int64_t> ranges; // the stages' loop ranges
  unsigned row = 0;            // the reduced loop
  unsigned last = 0;           // the innermost loop
  int64_t slabColumns = 0;     // a column chain's columns per slab
  unsigned columnsFrom = 0;    // the first loop they collapse (`last` if none)
  DenseMap<Value, Value> collapsedBuffers; // each with those loops as one dim
  int64_t minRows = 2;         // the fewest rows worth the loop over rows
};

struct KilnCpuRowKernelsPass : kiln::impl::KilnCpuRowKernelsBase<KilnCpuRowKernelsPass> {
  using KilnCpuRowKernelsBase::KilnCpuRowKernelsBase;
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<Block *> blocks;
    getOperation().walk([&](Block *block) { blocks.push_back(block); });
    for (Block *block : blocks) {
      SmallVector<Operation *> erased;
      for (kiln::ReductionChain &candidate : kiln::ReductionChain::chainsIn(*block))
        (void)Chain(std::move(candidate)).run(rewriter, threads, erased);
      for (Operation *op : erased)
        rewriter.eraseOp(op);
    }
  }
};

} // namespace
