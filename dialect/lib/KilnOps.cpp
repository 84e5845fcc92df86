//===- KilnOps.cpp - generated op definitions and folders ----------------===//
#include "kiln/Dialect/KilnOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace kiln;

#define GET_OP_CLASSES
#include "kiln/Dialect/KilnOps.cpp.inc"

// Folders: an op that does not change its operand folds to the operand.

OpFoldResult CastOp::fold(FoldAdaptor) {
  return getX().getType() == getType() ? getX() : OpFoldResult();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (getX().getType() == getType())
    return getX();
  // reshape(reshape(x)) keeps only the outer shape.
  if (auto inner = getX().getDefiningOp<ReshapeOp>()) {
    if (inner.getX().getType() == getType())
      return inner.getX();
    getXMutable().assign(inner.getX());
    return getResult();
  }
  return {};
}

OpFoldResult BroadcastOp::fold(FoldAdaptor) {
  return getX().getType() == getType() ? getX() : OpFoldResult();
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  // (A `?` operand may have a static result type: no fold then.)
  for (auto [i, p] : llvm::enumerate(getPerm()))
    if (p != static_cast<int64_t>(i))
      return {};
  return getX().getType() == getType() ? getX() : OpFoldResult();
}

OpFoldResult SliceOp::fold(FoldAdaptor) {
  return getX().getType() == getType() ? getX() : OpFoldResult();
}

OpFoldResult PadOp::fold(FoldAdaptor) {
  // Not by type: a `?` dim padded is `?` again.
  bool none = llvm::all_of(getLow(), [](int64_t l) { return l == 0; }) &&
              llvm::all_of(getHigh(), [](int64_t h) { return h == 0; });
  return none && getX().getType() == getType() ? getX() : OpFoldResult();
}

OpFoldResult FlipOp::fold(FoldAdaptor) {
  auto type = cast<RankedTensorType>(getX().getType());
  for (int64_t d : getDims())
    if (type.getDimSize(d) != 1)
      return {};
  return getX().getType() == getType() ? getX() : OpFoldResult();
}
