//===- DistinctResults.cpp - the kiln-distinct-results pass ---------------===//
//
// A buffer returned more than once (`return %0, %0`) is returned once; each
// further occurrence returns a copy in a buffer of its own (of the same
// run-time sizes), so that buffer-results-to-out-params gives every result
// its own out-param.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/Common/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace kiln {
#define GEN_PASS_DEF_KILNDISTINCTRESULTS
#include "kiln/Lowering/Common/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
struct KilnDistinctResultsPass
    : kiln::impl::KilnDistinctResultsBase<KilnDistinctResultsPass> {
  void runOnOperation() override {
    getOperation().walk([](func::ReturnOp ret) {
      llvm::SmallPtrSet<Value, 4> seen;
      for (OpOperand &operand : ret->getOpOperands()) {
        auto type = dyn_cast<MemRefType>(operand.get().getType());
        if (!type || seen.insert(operand.get()).second)
          continue;
        OpBuilder b(ret);
        // A `?` dim of the copy is the returned buffer's size.
        SmallVector<Value> sizes;
        for (int64_t d = 0; d < type.getRank(); ++d)
          if (type.isDynamicDim(d))
            sizes.push_back(memref::DimOp::create(b, ret.getLoc(), operand.get(), d));
        Value copy = memref::AllocOp::create(b, ret.getLoc(), type, sizes);
        memref::CopyOp::create(b, ret.getLoc(), operand.get(), copy);
        operand.set(copy);
      }
    });
  }
};
} // namespace
