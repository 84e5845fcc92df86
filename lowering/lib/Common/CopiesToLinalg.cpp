//===- CopiesToLinalg.cpp - the kiln-copies-to-linalg pass ---------------===//
//
// memref.copy becomes linalg.copy (GPUs: a copy is a kernel like any
// other) or, with `generic`, the same copy as a linalg.generic, which the
// CPU's kiln-vectorize and parallel loops take.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/Common/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace kiln {
#define GEN_PASS_DEF_KILNCOPIESTOLINALG
#include "kiln/Lowering/Common/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
struct KilnCopiesToLinalgPass : kiln::impl::KilnCopiesToLinalgBase<KilnCopiesToLinalgPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp c) { copies.push_back(c); });
    for (memref::CopyOp copy : copies) {
      OpBuilder b(copy);
      Location loc = copy.getLoc();
      if (!generic) {
        linalg::CopyOp::create(b, loc, copy.getSource(), copy.getTarget());
      } else {
        unsigned rank = cast<MemRefType>(copy.getTarget().getType()).getRank();
        AffineMap identity = b.getMultiDimIdentityMap(rank);
        linalg::GenericOp::create(
            b, loc, copy.getSource(), copy.getTarget(), {identity, identity},
            SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
            [](OpBuilder &nb, Location l, ValueRange args) {
              linalg::YieldOp::create(nb, l, args[0]);
            });
      }
      copy.erase();
    }
  }
};
} // namespace
