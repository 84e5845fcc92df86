//===- GpuSplitReductions.cpp - the kiln-gpu-split-reductions pass -------===//
//
// kiln-gpu-row-reductions gives each row one block, so a full reduction of
// 2^26 floats ran on one SM (86x slower than torch on the H200). Here a
// reduction of few long rows becomes row reductions that fill the GPU:
//
//   partials[r, s] = reduce(x[r, s*L : (s+1)*L])     rows x slices blocks
//   out[r]         = reduce(partials[r, :])           one block per row,
//   out[r]         = reduce(out[r], x[r, S*L : n])    ... which also adds the tail
//
// Slices are whole multiples of 1024 elements, so each one starts 16-byte
// aligned and its 256 threads load 4 floats at a time.
//
// A row of run-time length (a `?` dim) cannot be viewed as slices of a
// static shape: there the split is two hand-built kernels over blocks
// (BlockLoop.h), the slice count and length host arithmetic on the length.
// Each block's threads stride over its slice, 4 loads in flight a thread,
// and gpu.all_reduce combines them into partials[r, s]; a second launch
// combines each row's partials into the output. Only few rows of a static
// count qualify (a `?` row count could be many short rows).
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/Common/RowReduction.h"
#include "kiln/Lowering/Common/VectorUtils.h"
#include "kiln/Lowering/GPU/BlockLoop.h"
#include "kiln/Lowering/GPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"

namespace kiln {
#define GEN_PASS_DEF_KILNGPUSPLITREDUCTIONS
#include "kiln/Lowering/GPU/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// Fewer rows than this leave SMs idle at one block per row (the H200 has 132).
constexpr int64_t kMinRowsUnsplit = 128;
/// About one wave of 256-thread blocks on the H200 (132 SMs x 8).
constexpr int64_t kTargetBlocks = 1024;
/// A slice is worth a block only if it is at least this long.
constexpr int64_t kMinSliceLength = 16384;
/// Slices are multiples of one block-wide step: 256 threads x 4 floats.
constexpr int64_t kSliceGranule = 1024;

struct Split {
  int64_t rows, slices, sliceLength;
};

/// How `op` is split, if it is a row reduction worth splitting whose inputs
/// are all read in iteration order.
std::optional<Split> planSplit(linalg::GenericOp op) {
  if (!kiln::matchRowReduction(op))
    return std::nullopt;
  for (OpOperand *in : op.getDpsInputOperands()) {
    auto type = dyn_cast<MemRefType>(in->get().getType());
    if (!type || !type.hasStaticShape() || !op.getMatchingIndexingMap(in).isIdentity())
      return std::nullopt;
  }
  if (!cast<MemRefType>(op.getDpsInits()[0].getType()).hasStaticShape())
    return std::nullopt;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t rows = 1;
  for (int64_t r : ArrayRef(ranges).drop_back())
    rows *= r;
  int64_t length = ranges.back();
  if (rows == 0 || rows >= kMinRowsUnsplit || length < 2 * kMinSliceLength)
    return std::nullopt;
  int64_t slices = std::min<int64_t>(llvm::divideCeil(kTargetBlocks, rows), length / kMinSliceLength);
  int64_t sliceLength = length / slices / kSliceGranule * kSliceGranule;
  return Split{rows, length / sliceLength, sliceLength};
}

/// `buffer`'s innermost elements [begin, begin + size).
Value innerSlice(OpBuilder &b, Location loc, Value buffer, int64_t begin, int64_t size) {
  auto type = cast<MemRefType>(buffer.getType());
  SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes, strides(type.getRank(), b.getIndexAttr(1));
  for (int64_t d : type.getShape())
    sizes.push_back(b.getIndexAttr(d));
  offsets.back() = b.getIndexAttr(begin);
  sizes.back() = b.getIndexAttr(size);
  return memref::SubViewOp::create(b, loc, buffer, offsets, sizes, strides);
}

void split(linalg::GenericOp op, const Split &plan) {
  MLIRContext *ctx = op.getContext();
  Location loc = op.getLoc();
  kiln::RowReduction reduction = *kiln::matchRowReduction(op);
  unsigned rank = op.getNumLoops();
  Value out = op.getDpsInits()[0];
  auto outType = cast<MemRefType>(out.getType());
  int64_t covered = plan.slices * plan.sliceLength;
  int64_t length = op.getStaticLoopRanges().back();

  // The fill of the output moves after the partials' kernel, so that it
  // starts the combining kernel.
  Operation *first = op;
  if (auto fill = dyn_cast_or_null<linalg::FillOp>(op->getPrevNode());
      fill && fill.getOutputs()[0] == out)
    first = fill;
  OpBuilder b(first);

  // The views first: kiln-gpu-row-reductions takes a fill and the
  // reductions that follow it into one kernel only when nothing is between.
  SmallVector<Value> sliced;
  IRMapping tail;
  for (Value in : op.getDpsInputs()) {
    Value head = innerSlice(b, loc, in, 0, covered);
    SmallVector<int64_t> shape(cast<MemRefType>(head.getType()).getShape());
    shape.back() = plan.slices;
    shape.push_back(plan.sliceLength);
    SmallVector<ReassociationIndices> groups;
    for (unsigned d = 0; d + 1 < rank; ++d)
      groups.push_back({d});
    groups.push_back({rank - 1, rank});
    sliced.push_back(memref::ExpandShapeOp::create(b, loc, shape, head, groups));
    if (covered < length)
      tail.map(in, innerSlice(b, loc, in, covered, length - covered));
  }

  // partials[outer..., s] = reduce over x[outer..., s, 0:L].
  SmallVector<int64_t> partialShape(outType.getShape());
  partialShape.push_back(plan.slices);
  Type accType = outType.getElementType();
  Value partials = memref::AllocOp::create(b, loc, MemRefType::get(partialShape, accType));
  linalg::FillOp::create(b, loc,
                         kiln::reductionIdentity(b, loc, reduction.kind, accType), partials);
  SmallVector<AffineExpr> partialIndex;
  for (unsigned d = 0; d < rank; ++d)
    partialIndex.push_back(getAffineDimExpr(d, ctx));
  SmallVector<AffineMap> maps(sliced.size(), AffineMap::getMultiDimIdentityMap(rank + 1, ctx));
  maps.push_back(AffineMap::get(rank + 1, 0, partialIndex, ctx));
  SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
  iterators.push_back(utils::IteratorType::reduction);
  auto slicesOp = linalg::GenericOp::create(b, loc, TypeRange{}, sliced, ValueRange{partials},
                                            maps, iterators);
  IRMapping same;
  op.getRegion().cloneInto(&slicesOp.getRegion(), same);

  // out[outer...] = reduce over partials[outer..., :].
  b.setInsertionPoint(op);
  if (first != op)
    first->moveBefore(op);
  SmallVector<AffineMap> combineMaps = {AffineMap::getMultiDimIdentityMap(rank, ctx),
                                        op.getMatchingIndexingMap(op.getDpsInitOperand(0))};
  SmallVector<utils::IteratorType> combineIterators(rank - 1, utils::IteratorType::parallel);
  combineIterators.push_back(utils::IteratorType::reduction);
  kiln::buildCombine(b, loc, reduction, op.getBody()->getArguments().back(), partials, out,
                     combineMaps, combineIterators);

  // The tail: out[outer...] = reduce(out[outer...], x[outer..., S*L:n]).
  if (covered < length)
    b.clone(*op, tail);
  op.erase();
}

/// Threads of a run-time split's block, and the loads each keeps in flight.
constexpr int64_t kThreads = 256;
constexpr int64_t kUnroll = 4;

/// A row reduction of few rows (a static count) of run-time length whose
/// partials a block can all-reduce: 32-bit, inputs read in iteration order.
std::optional<std::pair<kiln::RowReduction, gpu::AllReduceOperation>>
planRunTimeSplit(linalg::GenericOp op) {
  std::optional<kiln::RowReduction> reduction = kiln::matchRowReduction(op);
  if (!reduction)
    return std::nullopt;
  Type accType = reduction->combiner->getResult(0).getType();
  std::optional<gpu::AllReduceOperation> allReduce = kiln::allReduceOf(reduction->kind);
  if (!allReduce || !kiln::allReducesOn(accType))
    return std::nullopt;
  for (OpOperand *in : op.getDpsInputOperands())
    if (!isa<MemRefType>(in->get().getType()) || !op.getMatchingIndexingMap(in).isIdentity())
      return std::nullopt;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  // Few static rows (a `?` count stops the product: UBSan, fuzz-capi).
  int64_t rows = 1;
  for (int64_t r : ArrayRef(ranges).drop_back())
    if (ShapedType::isDynamic(r) || llvm::MulOverflow(rows, r, rows))
      return std::nullopt;
  if (op.getNumDpsInputs() == 0 || !ShapedType::isDynamic(ranges.back()) || rows == 0 ||
      rows >= kMinRowsUnsplit)
    return std::nullopt;
  return std::make_pair(*reduction, *allReduce);
}

class RunTimeSplit {
public:
  RunTimeSplit(linalg::GenericOp op, kiln::RowReduction reduction,
               gpu::AllReduceOperation allReduce)
      : op(op), reduction(reduction), allReduce(allReduce), b(op),
        loc(op.getLoc()), host(b, loc) {
    rank = op.getNumLoops();
    accType = reduction.combiner->getResult(0).getType();
    SmallVector<int64_t> ranges = op.getStaticLoopRanges(); // outlives the view
    outer.assign(ranges.begin(), ranges.end() - 1);
    rows = 1;
    for (int64_t r : outer)
      rows *= r;
    length = memref::DimOp::create(b, loc, op.getDpsInputs()[0], rank - 1);
  }

  void build() {
    // As many slices as fill about a wave of blocks, each at least
    // kMinSliceLength long and a multiple of kSliceGranule; the last ones
    // may be short or empty.
    OpFoldResult wanted = host.min(
        b.getIndexAttr(llvm::divideCeil(kTargetBlocks, rows)),
        host.max(b.getIndexAttr(1), host.div(length, b.getIndexAttr(kMinSliceLength))));
    OpFoldResult granules = host.ceilDiv(host.ceilDiv(length, wanted),
                                         b.getIndexAttr(kSliceGranule));
    sliceLength = host.mul(granules, b.getIndexAttr(kSliceGranule));
    slices = wanted;
    Value partials = host.alloc({b.getIndexAttr(rows), slices}, accType);
    // At most kTargetBlocks + rows blocks: within every device's grid.
    kiln::buildBlockPerItem(
        b, loc, host.mul(b.getIndexAttr(rows), slices), kThreads,
        [&](OpBuilder &ob, Value item, Value tid) {
          Value n = kiln::indexValue(ob, loc, slices);
          Value row = arith::DivUIOp::create(ob, loc, item, n);
          Value slice = arith::RemUIOp::create(ob, loc, item, n);
          Value len = kiln::indexValue(ob, loc, sliceLength);
          Value begin = arith::MinUIOp::create(
              ob, loc, arith::MulIOp::create(ob, loc, slice, len), length);
          Value end = arith::MinUIOp::create(ob, loc, arith::AddIOp::create(ob, loc, begin, len),
                                             length);
          Value total = blockTotal(ob, threadPartial(ob, rowIvs(ob, row), begin, end, tid));
          onFirstThread(ob, tid, [&](OpBuilder &tb) {
            memref::StoreOp::create(tb, loc, total, partials, ValueRange{row, slice});
          });
        });
    kiln::buildBlockPerItem(
        b, loc, b.getIndexAttr(rows), kThreads, [&](OpBuilder &ob, Value row, Value tid) {
          Value init = kiln::reductionIdentity(ob, loc, reduction.kind, accType);
          auto loop = scf::ForOp::create(
              ob, loc, tid, kiln::indexValue(ob, loc, slices), c(ob, kThreads), ValueRange{init},
              [&](OpBuilder &fb, Location, Value s, ValueRange acc) {
                Value p = memref::LoadOp::create(fb, loc, partials, ValueRange{row, s});
                scf::YieldOp::create(
                    fb, loc, vector::makeArithReduction(fb, loc, reduction.kind, acc[0], p));
              });
          Value total = blockTotal(ob, loop.getResult(0));
          onFirstThread(ob, tid, [&](OpBuilder &tb) {
            OpOperand *out = op.getDpsInitOperand(0);
            SmallVector<Value> ivs = rowIvs(tb, row);
            ivs.push_back(c(tb, 0)); // the out map does not read the reduced loop
            SmallVector<Value> at =
                kiln::indicesFor(tb, loc, op.getMatchingIndexingMap(out), ivs);
            Value old = memref::LoadOp::create(tb, loc, out->get(), at);
            memref::StoreOp::create(
                tb, loc, vector::makeArithReduction(tb, loc, reduction.kind, old, total),
                out->get(), at);
          });
        });
    op.erase();
  }

private:
  Value c(OpBuilder &ob, int64_t v) { return arith::ConstantIndexOp::create(ob, loc, v); }

  /// The outer loops' ivs of row `row`.
  SmallVector<Value> rowIvs(OpBuilder &ob, Value row) {
    SmallVector<Value> ivs(outer.size());
    for (int64_t d = static_cast<int64_t>(outer.size()) - 1; d >= 0; --d) {
      ivs[d] = arith::RemUIOp::create(ob, loc, row, c(ob, outer[d]));
      row = arith::DivUIOp::create(ob, loc, row, c(ob, outer[d]));
    }
    return ivs;
  }

  /// The body's element at position `j` of the row at `ivs`, combined into `acc`.
  Value step(OpBuilder &ob, ArrayRef<Value> ivs, Value j, Value acc) {
    SmallVector<Value> at(ivs);
    at.push_back(j);
    IRMapping mapping;
    for (OpOperand *in : op.getDpsInputOperands())
      mapping.map(op.getMatchingBlockArgument(in),
                  memref::LoadOp::create(ob, loc, in->get(), at));
    kiln::cloneBody(ob, loc, *op.getBody(), mapping, 0, reduction.combiner);
    return vector::makeArithReduction(ob, loc, reduction.kind, acc,
                                      mapping.lookup(reduction.element));
  }

  /// This thread's partial over begin + tid, begin + tid + kThreads, ...
  /// below `end`: kUnroll at a time, then one at a time.
  Value threadPartial(OpBuilder &ob, ArrayRef<Value> ivs, Value begin, Value end, Value tid) {
    Value identity = kiln::reductionIdentity(ob, loc, reduction.kind, accType);
    return kiln::buildThreadStrideLoop(
        ob, loc, begin, end, tid, kThreads, kUnroll, identity,
        [&](OpBuilder &fb, Value p, ValueRange cur) -> SmallVector<Value> {
          return {step(fb, ivs, p, cur[0])};
        })[0];
  }

  Value blockTotal(OpBuilder &ob, Value partial) {
    return gpu::AllReduceOp::create(ob, loc, partial,
                                    gpu::AllReduceOperationAttr::get(ob.getContext(), allReduce),
                                    /*uniform=*/true);
  }

  void onFirstThread(OpBuilder &ob, Value tid, function_ref<void(OpBuilder &)> then) {
    Value first = arith::CmpIOp::create(ob, loc, arith::CmpIPredicate::eq, tid, c(ob, 0));
    scf::IfOp::create(ob, loc, first, [&](OpBuilder &tb, Location) {
      then(tb);
      scf::YieldOp::create(tb, loc);
    });
  }

  linalg::GenericOp op;
  kiln::RowReduction reduction;
  gpu::AllReduceOperation allReduce;
  OpBuilder b;
  Location loc;
  kiln::HostSizes host;
  unsigned rank;
  Type accType;
  SmallVector<int64_t> outer;
  int64_t rows;
  Value length;
  OpFoldResult slices, sliceLength;
};

struct KilnGpuSplitReductionsPass
    : kiln::impl::KilnGpuSplitReductionsBase<KilnGpuSplitReductionsPass> {
  void runOnOperation() override {
    SmallVector<std::pair<linalg::GenericOp, Split>> splits;
    SmallVector<linalg::GenericOp> runTimeSplits;
    getOperation().walk([&](linalg::GenericOp op) {
      if (!isa<func::FuncOp>(op->getParentOp()))
        return;
      if (std::optional<Split> plan = planSplit(op))
        splits.emplace_back(op, *plan);
      else if (planRunTimeSplit(op))
        runTimeSplits.push_back(op);
    });
    for (auto &[op, plan] : splits)
      split(op, plan);
    for (linalg::GenericOp op : runTimeSplits) {
      auto [reduction, allReduce] = *planRunTimeSplit(op);
      RunTimeSplit(op, reduction, allReduce).build();
    }
  }
};

} // namespace
