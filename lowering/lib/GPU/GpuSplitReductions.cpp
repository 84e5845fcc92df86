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
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/Common/RowReduction.h"
#include "kiln/Lowering/GPU/Passes.h"

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
  BlockArgument acc = op.getBody()->getArguments().back();
  linalg::GenericOp::create(
      b, loc, TypeRange{}, ValueRange{partials}, ValueRange{out}, combineMaps,
      combineIterators, [&](OpBuilder &nb, Location l, ValueRange args) {
        IRMapping mapping;
        mapping.map(reduction.element, args[0]);
        mapping.map(acc, args[1]);
        linalg::YieldOp::create(nb, l, nb.clone(*reduction.combiner, mapping)->getResults());
      });

  // The tail: out[outer...] = reduce(out[outer...], x[outer..., S*L:n]).
  if (covered < length)
    b.clone(*op, tail);
  op.erase();
}

struct KilnGpuSplitReductionsPass
    : kiln::impl::KilnGpuSplitReductionsBase<KilnGpuSplitReductionsPass> {
  void runOnOperation() override {
    SmallVector<std::pair<linalg::GenericOp, Split>> splits;
    getOperation().walk([&](linalg::GenericOp op) {
      if (!isa<func::FuncOp>(op->getParentOp()))
        return;
      if (std::optional<Split> plan = planSplit(op))
        splits.emplace_back(op, *plan);
    });
    for (auto &[op, plan] : splits)
      split(op, plan);
  }
};

} // namespace
