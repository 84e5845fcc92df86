//===- BlockLoop.cpp - launches of blocks that loop over work items ------===//
#include "kiln/Lowering/GPU/BlockLoop.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace kiln {

void buildBlockLoop(OpBuilder &b, Location loc, int64_t items, int64_t threads, int64_t maxGridX,
                    TypeRange workgroupBuffers,
                    function_ref<void(OpBuilder &, Value, Value, ValueRange)> body) {
  auto c = [&](OpBuilder &ob, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(ob, loc, v);
  };
  int64_t grid = std::min(items, maxGridX);
  auto launch = gpu::LaunchOp::create(b, loc, c(b, grid), c(b, 1), c(b, 1), c(b, threads),
                                      c(b, 1), c(b, 1), /*dynamicSharedMemorySize=*/nullptr,
                                      /*asyncTokenType=*/nullptr, /*asyncDependencies=*/{},
                                      workgroupBuffers);
  OpBuilder lb = OpBuilder::atBlockBegin(&launch.getBody().front());
  Value tid = launch.getThreadIds().x;
  SmallVector<Value> buffers(launch.getWorkgroupAttributions());
  scf::ForOp::create(lb, loc, launch.getBlockIds().x, c(lb, items), c(lb, grid), ValueRange{},
                     [&](OpBuilder &fb, Location, Value item, ValueRange) {
                       body(fb, item, tid, buffers);
                       scf::YieldOp::create(fb, loc);
                     });
  gpu::TerminatorOp::create(lb, loc);
}

} // namespace kiln
