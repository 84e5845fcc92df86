//===- GpuSinkViews.cpp - the kiln-gpu-sink-views pass -------------------===//
//
// Slices of a buffer (memref.subview) that a gpu.launch uses are cloned into
// the launch body, so that the outlined kernel takes each buffer once however
// many views of it it reads: a sum of 33 slices of one input is one storage
// buffer on Vulkan (devices bound the storage buffers per kernel: 32 on
// lavapipe) and one pointer on CUDA (kernel parameters are bounded to 4 KiB).
// Only slices whose every use in the launch is a load, a store or another
// slice are sunk: fold-memref-alias-ops folds those into the accesses once
// kernels are outlined, reshapes of slices too. (Reshapes of a whole buffer
// keep its identity layout and were never copies; they stay kernel
// arguments.)
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/GPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"

namespace kiln {
#define GEN_PASS_DEF_KILNGPUSINKVIEWS
#include "kiln/Lowering/GPU/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
/// A slice, or a reshape of one (it keeps the slice's strides: a kernel
/// argument with `?` strides or offset, which SPIR-V cannot take, where the
/// slice was of a buffer of run-time sizes).
bool isFoldableView(Operation *op) {
  if (isa_and_nonnull<memref::SubViewOp>(op))
    return true;
  if (!isa_and_nonnull<memref::ExpandShapeOp, memref::CollapseShapeOp>(op))
    return false;
  return !cast<MemRefType>(op->getResult(0).getType()).getLayout().isIdentity();
}

/// Whether every use of `view` inside `body` is an access that
/// fold-memref-alias-ops rewrites onto the view's source, or such a view.
bool onlyFoldableUses(Value view, Region &body) {
  // fold-memref-alias-ops folds transfers through slices, not reshapes.
  bool reshape = isa_and_nonnull<memref::ExpandShapeOp, memref::CollapseShapeOp>(
      view.getDefiningOp());
  for (OpOperand &use : view.getUses()) {
    Operation *user = use.getOwner();
    if (!body.isAncestor(user->getParentRegion()))
      continue;
    if (reshape && isa<vector::TransferReadOp, vector::TransferWriteOp>(user))
      return false;
    if (isa<memref::LoadOp, vector::LoadOp, vector::TransferReadOp>(user))
      continue;
    if (auto store = dyn_cast<memref::StoreOp>(user);
        store && store.getMemRef() == view)
      continue;
    if (auto store = dyn_cast<vector::StoreOp>(user);
        store && store.getBase() == view)
      continue;
    if (auto write = dyn_cast<vector::TransferWriteOp>(user);
        write && write.getBase() == view)
      continue;
    if (isFoldableView(user) && use.getOperandNumber() == 0 &&
        onlyFoldableUses(user->getResult(0), body))
      continue;
    return false;
  }
  return true;
}

struct KilnGpuSinkViewsPass
    : kiln::impl::KilnGpuSinkViewsBase<KilnGpuSinkViewsPass> {
  void runOnOperation() override {
    getOperation().walk([](gpu::LaunchOp launch) {
      Region &body = launch.getBody();
      llvm::SetVector<Value> above;
      getUsedValuesDefinedAbove(body, above);
      IRMapping map;
      OpBuilder b = OpBuilder::atBlockBegin(&body.front());
      // Clones `v`'s chain of slices (and their constant operands) into the
      // body; the root buffer stays a kernel argument.
      std::function<Value(Value)> sink = [&](Value v) -> Value {
        if (Value sunk = map.lookupOrNull(v))
          return sunk;
        Operation *def = v.getDefiningOp();
        if (!isFoldableView(def) && !isa_and_nonnull<arith::ConstantOp>(def))
          return v;
        for (Value operand : def->getOperands())
          map.map(operand, sink(operand));
        b.clone(*def, map);
        return map.lookup(v);
      };
      for (Value v : above)
        if (isFoldableView(v.getDefiningOp()) && onlyFoldableUses(v, body))
          v.replaceUsesWithIf(sink(v), [&](OpOperand &use) {
            return body.isAncestor(use.getOwner()->getParentRegion());
          });
    });
  }
};
} // namespace
