//===- TaskLoops.cpp - parallel loops whose iterations are tasks ---------===//
#include "kiln/Lowering/Common/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;

void kiln::buildTaskLoop(OpBuilder &b, Location loc, ValueRange lbs, ValueRange ubs,
                         ValueRange steps, int64_t minTaskSize,
                         function_ref<void(OpBuilder &, ValueRange)> body) {
  auto oneTrip = [&](size_t d) {
    std::optional<int64_t> lb = getConstantIntValue(lbs[d]), ub = getConstantIntValue(ubs[d]),
                           step = getConstantIntValue(steps[d]);
    return lb && ub && step && *ub > *lb && *ub - *lb <= *step;
  };
  SmallVector<Value> loopLbs, loopUbs, loopSteps;
  for (size_t d = 0; d < lbs.size(); ++d)
    if (!oneTrip(d)) {
      loopLbs.push_back(lbs[d]);
      loopUbs.push_back(ubs[d]);
      loopSteps.push_back(steps[d]);
    }
  if (loopLbs.empty()) { // one iteration in all: a loop of one, for the body's sake
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    loopLbs.push_back(zero);
    loopUbs.push_back(arith::ConstantIndexOp::create(b, loc, 1));
    loopSteps.push_back(loopUbs.back());
  }
  auto loop = scf::ParallelOp::create(
      b, loc, loopLbs, loopUbs, loopSteps, [&](OpBuilder &pb, Location, ValueRange ivs) {
        SmallVector<Value> all;
        auto iv = ivs.begin();
        for (size_t d = 0; d < lbs.size(); ++d)
          all.push_back(oneTrip(d) ? lbs[d] : *iv++);
        body(pb, all);
        scf::ReduceOp::create(pb, loc);
      });
  loop->setAttr(kMinTaskSizeAttr, b.getIndexAttr(minTaskSize));
}

void kiln::buildTaskLoop(OpBuilder &b, Location loc, ValueRange sizes,
                         function_ref<void(OpBuilder &, ValueRange)> body) {
  SmallVector<Value> zeros(sizes.size(), arith::ConstantIndexOp::create(b, loc, 0));
  SmallVector<Value> ones(sizes.size(), arith::ConstantIndexOp::create(b, loc, 1));
  buildTaskLoop(b, loc, zeros, sizes, ones, 1, body);
}
