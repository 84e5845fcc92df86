//===- GpuCopiesToLinalg.cpp - the kiln-gpu-copies-to-linalg pass -------===//
//
// memref.copy becomes linalg.copy, so that on GPUs a copy (concat, pad, an
// output that is an input) is a kernel like any other.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/GPU/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace kiln {
#define GEN_PASS_DEF_KILNGPUCOPIESTOLINALG
#include "kiln/Lowering/GPU/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
struct KilnGpuCopiesToLinalgPass
    : kiln::impl::KilnGpuCopiesToLinalgBase<KilnGpuCopiesToLinalgPass> {
  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp c) { copies.push_back(c); });
    for (memref::CopyOp copy : copies) {
      OpBuilder b(copy);
      linalg::CopyOp::create(b, copy.getLoc(), copy.getSource(), copy.getTarget());
      copy.erase();
    }
  }
};
} // namespace
