//===- CpuFillBorders.cpp - the kiln-cpu-fill-borders pass ---------------===//
//
// A pad (kiln.pad, a conv's padded input) fills its whole buffer and then
// copies the input into a view of it: the view is written twice. Where a
// linalg.fill of a buffer is followed by a memref.copy into a unit-stride
// view of it, and nothing else touches the buffer in between, the fill
// writes only the slabs around the view (at most two per dim).
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace kiln {
#define GEN_PASS_DEF_KILNCPUFILLBORDERS
#include "kiln/Lowering/CPU/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// The unit-stride, rank-preserving view of `fill`'s buffer that the first
/// op after it touching the buffer (in its block) copies another buffer
/// into, or null.
memref::SubViewOp viewCopiedAfter(linalg::FillOp fill) {
  Value buffer = fill.getDpsInits()[0];
  if (!isa<BlockArgument>(buffer) && !buffer.getDefiningOp<memref::AllocOp>())
    return {};
  Block *block = fill->getBlock();
  // Every op in the block using the buffer, or a subview of it, after the fill.
  SmallVector<Operation *> touching;
  for (OpOperand &use : buffer.getUses()) {
    Operation *user = block->findAncestorOpInBlock(*use.getOwner());
    if (!user || !fill->isBeforeInBlock(user))
      continue;
    auto view = dyn_cast<memref::SubViewOp>(user);
    if (!view || view != use.getOwner()) {
      touching.push_back(user);
      continue;
    }
    for (Operation *viewUser : view->getUsers())
      if (Operation *top = block->findAncestorOpInBlock(*viewUser))
        touching.push_back(top);
  }
  if (touching.empty())
    return {};
  Operation *first = *llvm::min_element(
      touching, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  auto copy = dyn_cast<memref::CopyOp>(first);
  if (!copy)
    return {};
  auto view = copy.getTarget().getDefiningOp<memref::SubViewOp>();
  auto sourceView = copy.getSource().getDefiningOp<memref::SubViewOp>();
  if (!view || view.getSource() != buffer || copy.getSource() == buffer ||
      (sourceView && sourceView.getSource() == buffer) ||
      view.getType().getRank() != view.getSourceType().getRank() ||
      !llvm::all_of(view.getStaticStrides(), [](int64_t s) { return s == 1; }) ||
      llvm::any_of(view.getStaticOffsets(), ShapedType::isDynamic))
    return {};
  return view;
}

/// Fills the slabs of `fill`'s buffer around `view`: along each dim d, the
/// parts before and after the view, within the view along the dims before d.
void fillAround(linalg::FillOp fill, memref::SubViewOp view) {
  OpBuilder b(fill);
  Location loc = fill.getLoc();
  Value buffer = fill.getDpsInits()[0];
  int64_t rank = view.getType().getRank();
  auto value = [&](OpFoldResult v) { return getValueOrCreateConstantIndexOp(b, loc, v); };
  SmallVector<OpFoldResult> viewSizes = view.getMixedSizes();
  SmallVector<OpFoldResult> unit(rank, b.getIndexAttr(1));
  for (int64_t d = 0; d < rank; ++d) {
    int64_t offset = view.getStaticOffsets()[d];
    OpFoldResult end = getAsOpFoldResult(
        b.createOrFold<arith::AddIOp>(loc, value(b.getIndexAttr(offset)), value(viewSizes[d])));
    OpFoldResult full = memref::getMixedSize(b, loc, buffer, d);
    OpFoldResult after =
        getAsOpFoldResult(b.createOrFold<arith::SubIOp>(loc, value(full), value(end)));
    for (auto [start, size] : {std::pair<OpFoldResult, OpFoldResult>{b.getIndexAttr(0),
                                                                      b.getIndexAttr(offset)},
                               {end, after}}) {
      std::optional<int64_t> count = getConstantIntValue(size);
      if (count && *count <= 0)
        continue;
      SmallVector<OpFoldResult> offsets, sizes;
      for (int64_t e = 0; e < rank; ++e) {
        offsets.push_back(e < d    ? b.getIndexAttr(view.getStaticOffsets()[e])
                          : e == d ? start
                                   : b.getIndexAttr(0));
        sizes.push_back(e < d ? viewSizes[e] : e == d ? size : memref::getMixedSize(b, loc, buffer, e));
      }
      Value slab = memref::SubViewOp::create(b, loc, buffer, offsets, sizes, unit);
      linalg::FillOp::create(b, loc, fill.getInputs(), slab);
    }
  }
  fill.erase();
}

struct KilnCpuFillBordersPass : kiln::impl::KilnCpuFillBordersBase<KilnCpuFillBordersPass> {
  void runOnOperation() override {
    SmallVector<linalg::FillOp> fills;
    getOperation().walk([&](linalg::FillOp f) {
      if (f.hasPureBufferSemantics())
        fills.push_back(f);
    });
    for (linalg::FillOp fill : fills)
      if (memref::SubViewOp view = viewCopiedAfter(fill))
        fillAround(fill, view);
  }
};

} // namespace
