//===- TaskLoops.cpp - parallel loops whose iterations are tasks ---------===//
#include "kiln/Lowering/Common/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;

void kiln::buildTaskLoop(OpBuilder &b, Location loc, ValueRange sizes,
                         function_ref<void(OpBuilder &, ValueRange)> body) {
  SmallVector<Value> dims;
  for (Value size : sizes)
    if (getConstantIntValue(size) != 1)
      dims.push_back(size);
  if (dims.empty())
    dims.push_back(arith::ConstantIndexOp::create(b, loc, 1));
  SmallVector<Value> zeros(dims.size(), arith::ConstantIndexOp::create(b, loc, 0));
  SmallVector<Value> ones(dims.size(), arith::ConstantIndexOp::create(b, loc, 1));
  auto loop = scf::ParallelOp::create(
      b, loc, zeros, dims, ones, [&](OpBuilder &pb, Location, ValueRange ivs) {
        Value zero = arith::ConstantIndexOp::create(pb, loc, 0);
        SmallVector<Value> all;
        auto iv = ivs.begin();
        for (Value size : sizes)
          all.push_back(getConstantIntValue(size) == 1 ? zero : *iv++);
        body(pb, all);
        scf::ReduceOp::create(pb, loc);
      });
  loop->setAttr(kMinTaskSizeAttr, b.getIndexAttr(1));
}
