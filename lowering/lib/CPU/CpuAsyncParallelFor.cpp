//===- CpuAsyncParallelFor.cpp - the kiln-cpu-async-parallel-for pass ----===//
//
// Upstream's scf.parallel -> async lowering, with the minimum task size
// taken from each loop's `kiln.min_task_size` where it has one. A function
// it creates for a scalar loop body (one LLVM's loop vectoriser is left
// to vectorise) stays a call: LLVM inlined it into the async tasks'
// coroutines, where a loop of run-time bounds (its sizes reloaded from the
// coroutine frame) stayed scalar, and the `?`-images max_pool ran 3x slower
// than its static twin. Bodies kiln-vectorize vectorised stay inlinable
// (as calls, an add of 2^24 ran 10-20% slower).
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Async/IR/Async.h"
#include "mlir/Dialect/Async/Transforms.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_KILNCPUASYNCPARALLELFOR
#include "kiln/Lowering/CPU/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

struct KilnCpuAsyncParallelForPass
    : kiln::impl::KilnCpuAsyncParallelForBase<KilnCpuAsyncParallelForPass> {
  using KilnCpuAsyncParallelForBase::KilnCpuAsyncParallelForBase;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    int64_t fallback = minTaskSize;
    async::populateAsyncParallelForPatterns(
        patterns, /*asyncDispatch=*/false, numWorkerThreads,
        [fallback](ImplicitLocOpBuilder b, scf::ParallelOp loop) -> Value {
          auto size = loop->getAttrOfType<IntegerAttr>(kiln::kMinTaskSizeAttr);
          return arith::ConstantIndexOp::create(b, size ? size.getInt() : fallback);
        });
    llvm::DenseSet<Operation *> before;
    for (auto f : getOperation().getOps<func::FuncOp>())
      before.insert(f);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    auto isVector = [](Type t) { return isa<VectorType>(t); };
    for (auto f : getOperation().getOps<func::FuncOp>()) {
      if (before.contains(f))
        continue;
      bool vectorized = f.walk([&](Operation *op) {
                           return llvm::any_of(op->getResultTypes(), isVector)
                                      ? WalkResult::interrupt()
                                      : WalkResult::advance();
                         }).wasInterrupted();
      if (!vectorized)
        f->setAttr("passthrough",
                   ArrayAttr::get(&getContext(), {StringAttr::get(&getContext(), "noinline")}));
    }
  }
};

} // namespace
