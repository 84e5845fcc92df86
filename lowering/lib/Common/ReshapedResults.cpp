//===- ReshapedResults.cpp - the kiln-reshaped-results pass ---------------===//
//
// buffer-results-to-out-params copies a returned view into its out-param.
// Where the view reshapes a buffer the function allocates, that buffer can
// be the out-param itself, seen through the inverse reshape: the kernel
// that fills it then writes the result, and the copy (a kernel of its own
// on the GPUs) goes. Buffers of run-time size too: the copy says the
// out-param has the view's sizes, so the inverse view has the buffer's.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/Common/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace kiln {
#define GEN_PASS_DEF_KILNRESHAPEDRESULTS
#include "kiln/Lowering/Common/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// `out` seen as `alloc`'s type, undoing `view` (a reshape of `alloc`):
/// at the block's start, where the out-param is defined (nothing then
/// stands between ops that were adjacent, a matmul and its epilogue), or
/// where `alloc` was for an expansion that takes its run-time sizes.
Value inverseView(Operation *view, Value out, memref::AllocOp alloc) {
  Location loc = view->getLoc();
  auto b = OpBuilder::atBlockBegin(cast<BlockArgument>(out).getOwner());
  if (auto expand = dyn_cast<memref::ExpandShapeOp>(view))
    return memref::CollapseShapeOp::create(b, loc, out, expand.getReassociationIndices());
  auto collapse = cast<memref::CollapseShapeOp>(view);
  if (alloc.getType().hasStaticShape())
    return memref::ExpandShapeOp::create(b, loc, alloc.getType().getShape(), out,
                                         collapse.getReassociationIndices());
  b.setInsertionPoint(alloc);
  return memref::ExpandShapeOp::create(b, loc, alloc.getType(), out,
                                       collapse.getReassociationIndices(),
                                       alloc.getMixedSizes());
}

/// Makes the buffer `copy` reads through a reshape the out-param it writes,
/// when that is safe: the out-param is an argument nothing else uses, the
/// buffer a contiguous allocation of the same block, and the copy
/// one of the result copies before the return (nothing writes the buffer
/// after it).
void forward(memref::CopyOp copy) {
  for (Operation *next = copy->getNextNode(); !next->hasTrait<OpTrait::IsTerminator>();
       next = next->getNextNode())
    if (!isa<memref::CopyOp, memref::DeallocOp>(next))
      return;
  auto out = dyn_cast<BlockArgument>(copy.getTarget());
  Operation *view = copy.getSource().getDefiningOp();
  if (!out || !out.hasOneUse() || !isa_and_present<memref::ExpandShapeOp, memref::CollapseShapeOp>(view))
    return;
  auto alloc = view->getOperand(0).getDefiningOp<memref::AllocOp>();
  auto outType = cast<MemRefType>(out.getType());
  if (!alloc || alloc->getBlock() != out.getOwner() || alloc->getBlock() != copy->getBlock() ||
      !alloc.getType().getLayout().isIdentity() ||
      !outType.getLayout().isIdentity() ||
      alloc.getType().getMemorySpace() != outType.getMemorySpace())
    return;
  for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
    if (isa<memref::DeallocOp>(user))
      user->erase();
  alloc->replaceAllUsesWith(ValueRange{inverseView(view, out, alloc)});
  alloc->erase();
  // The copy now reads its own target.
  copy->erase();
  if (view->use_empty())
    view->erase();
}

struct KilnReshapedResultsPass
    : kiln::impl::KilnReshapedResultsBase<KilnReshapedResultsPass> {
  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp copy) { copies.push_back(copy); });
    for (memref::CopyOp copy : copies)
      forward(copy);
  }
};

} // namespace
