//===- GpuMaterializeConstants.cpp - the kiln-gpu-materialize-constants pass ===//
//
// A tensor constant would bufferize to a memref.get_global: host memory,
// which a kernel cannot read and a GPU plan cannot name. On GPUs each one is
// computed on the device instead: a splat as a fill, others element by
// element (stores that kiln-gpu-map-loops runs as a one-thread kernel).
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/GPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace kiln {
#define GEN_PASS_DEF_KILNGPUMATERIALIZECONSTANTS
#include "kiln/Lowering/GPU/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// The most elements of a non-splat constant written element by element;
/// more would make a long serial kernel.
constexpr int64_t kMaxElements = 4096;

struct KilnGpuMaterializeConstantsPass
    : kiln::impl::KilnGpuMaterializeConstantsBase<KilnGpuMaterializeConstantsPass> {
  void runOnOperation() override {
    SmallVector<arith::ConstantOp> constants;
    getOperation().walk([&](arith::ConstantOp c) {
      if (isa<RankedTensorType>(c.getType()))
        constants.push_back(c);
    });
    for (arith::ConstantOp c : constants)
      if (failed(materialize(c)))
        return signalPassFailure();
  }

  LogicalResult materialize(arith::ConstantOp c) {
    auto type = cast<RankedTensorType>(c.getType());
    auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
    if (!dense || !type.hasStaticShape())
      return c.emitError() << "a constant " << type
                           << " of this form is not supported on GPUs";
    OpBuilder b(c);
    Location loc = c.getLoc();
    auto empty = [&] {
      return tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
    };
    Value result;
    if (type.getNumElements() == 0) {
      result = empty();
    } else if (dense.isSplat()) {
      Value value = arith::ConstantOp::create(
          b, loc, cast<TypedAttr>(dense.getSplatValue<Attribute>()));
      result = linalg::FillOp::create(b, loc, value, Value(empty())).getResult(0);
    } else {
      if (type.getNumElements() > kMaxElements)
        return c.emitError() << "a constant " << type << " with "
                             << type.getNumElements()
                             << " elements is not supported on GPUs (at most "
                             << kMaxElements << " unless all are equal); pass it as an input";
      // One scalar constant per distinct value.
      DenseMap<Attribute, Value> scalars;
      SmallVector<Value> elements;
      for (Attribute v : dense.getValues<Attribute>()) {
        Value &scalar = scalars[v];
        if (!scalar)
          scalar = arith::ConstantOp::create(b, loc, cast<TypedAttr>(v));
        elements.push_back(scalar);
      }
      result = tensor::FromElementsOp::create(b, loc, type, elements);
    }
    c.replaceAllUsesWith(result);
    c.erase();
    return success();
  }
};

} // namespace
