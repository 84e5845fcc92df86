//===- BlockLoop.cpp - launches of blocks that loop over work items ------===//
#include "kiln/Lowering/GPU/BlockLoop.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;

namespace kiln {

Value indexValue(OpBuilder &b, Location loc, OpFoldResult v) {
  if (std::optional<int64_t> c = getConstantIntValue(v))
    return arith::ConstantIndexOp::create(b, loc, *c);
  return cast<Value>(v);
}

Value HostSizes::value(OpFoldResult v) { return indexValue(b, loc, v); }

template <typename OpT>
OpFoldResult HostSizes::fold(OpFoldResult x, OpFoldResult y, int64_t (*op)(int64_t, int64_t)) {
  std::optional<int64_t> cx = getConstantIntValue(x), cy = getConstantIntValue(y);
  if (cx && cy)
    return b.getIndexAttr(op(*cx, *cy));
  return OpT::create(b, loc, value(x), value(y)).getResult();
}

OpFoldResult HostSizes::mul(OpFoldResult x, OpFoldResult y) {
  if (getConstantIntValue(x) == 1)
    return y;
  if (getConstantIntValue(y) == 1)
    return x;
  return fold<arith::MulIOp>(x, y, [](int64_t p, int64_t q) { return p * q; });
}
OpFoldResult HostSizes::ceilDiv(OpFoldResult x, OpFoldResult y) {
  return fold<arith::CeilDivSIOp>(x, y, [](int64_t p, int64_t q) { return (p + q - 1) / q; });
}
OpFoldResult HostSizes::div(OpFoldResult x, OpFoldResult y) {
  return fold<arith::DivSIOp>(x, y, [](int64_t p, int64_t q) { return p / q; });
}
OpFoldResult HostSizes::min(OpFoldResult x, OpFoldResult y) {
  return fold<arith::MinSIOp>(x, y, [](int64_t p, int64_t q) { return std::min(p, q); });
}
OpFoldResult HostSizes::max(OpFoldResult x, OpFoldResult y) {
  return fold<arith::MaxSIOp>(x, y, [](int64_t p, int64_t q) { return std::max(p, q); });
}

OpFoldResult HostSizes::where(bool greater, OpFoldResult x, OpFoldResult a, OpFoldResult y) {
  std::optional<int64_t> ca = getConstantIntValue(a), cy = getConstantIntValue(y);
  if (ca && cy)
    return (*ca > *cy) == greater ? x : OpFoldResult(b.getIndexAttr(0));
  Value holds = arith::CmpIOp::create(
      b, loc, greater ? arith::CmpIPredicate::sgt : arith::CmpIPredicate::sle, value(a), value(y));
  return arith::SelectOp::create(b, loc, holds, value(x), value(b.getIndexAttr(0))).getResult();
}
OpFoldResult HostSizes::whereGreater(OpFoldResult x, OpFoldResult a, OpFoldResult y) {
  return where(true, x, a, y);
}
OpFoldResult HostSizes::whereNotGreater(OpFoldResult x, OpFoldResult a, OpFoldResult y) {
  return where(false, x, a, y);
}

void buildBlockPerItem(OpBuilder &b, Location loc, OpFoldResult items, int64_t threads,
                       function_ref<void(OpBuilder &, Value, Value)> body) {
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto launch = gpu::LaunchOp::create(b, loc, indexValue(b, loc, items), one, one,
                                      arith::ConstantIndexOp::create(b, loc, threads), one, one);
  OpBuilder lb = OpBuilder::atBlockBegin(&launch.getBody().front());
  body(lb, launch.getBlockIds().x, launch.getThreadIds().x);
  gpu::TerminatorOp::create(lb, loc);
}

SmallVector<Value> buildThreadStrideLoop(
    OpBuilder &b, Location loc, Value begin, Value end, Value tid, int64_t threads,
    int64_t unroll, ValueRange init,
    function_ref<SmallVector<Value>(OpBuilder &, Value, ValueRange)> step) {
  auto c = [&](OpBuilder &ob, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(ob, loc, v);
  };
  int64_t stride = threads * unroll;
  Value span = arith::SubIOp::create(b, loc, end, begin);
  Value mainEnd = arith::AddIOp::create(
      b, loc, begin,
      arith::MulIOp::create(b, loc, arith::DivUIOp::create(b, loc, span, c(b, stride)),
                            c(b, stride)));
  SmallVector<Value> carried(init);
  auto steps = [&](Value from, Value to, int64_t count) {
    auto loop = scf::ForOp::create(
        b, loc, arith::AddIOp::create(b, loc, from, tid), to, c(b, threads * count), carried,
        [&](OpBuilder &fb, Location, Value p, ValueRange cur) {
          SmallVector<Value> next(cur);
          for (int64_t j = 0; j < count; ++j)
            next = step(fb, arith::AddIOp::create(fb, loc, p, c(fb, j * threads)), next);
          scf::YieldOp::create(fb, loc, next);
        });
    carried.assign(loop.getResults().begin(), loop.getResults().end());
  };
  steps(begin, mainEnd, unroll);
  steps(mainEnd, end, 1);
  return carried;
}

std::optional<gpu::AllReduceOperation> allReduceOf(vector::CombiningKind kind) {
  using G = gpu::AllReduceOperation;
  using Kind = vector::CombiningKind;
  switch (kind) {
  case Kind::ADD: return G::ADD;
  case Kind::MUL: return G::MUL;
  case Kind::MAXIMUMF: return G::MAXIMUMF;
  case Kind::MINIMUMF: return G::MINIMUMF;
  case Kind::MAXSI: return G::MAXSI;
  case Kind::MINSI: return G::MINSI;
  case Kind::MAXUI: return G::MAXUI;
  case Kind::MINUI: return G::MINUI;
  case Kind::AND: return G::AND;
  case Kind::OR: return G::OR;
  default: return std::nullopt;
  }
}

bool allReducesOn(Type accType) { return accType.isF32() || accType.isInteger(32); }

Value HostSizes::alloc(ArrayRef<OpFoldResult> shape, Type element) {
  SmallVector<int64_t> sizes;
  SmallVector<Value> dynamic;
  for (OpFoldResult size : shape) {
    std::optional<int64_t> n = getConstantIntValue(size);
    sizes.push_back(n ? *n : ShapedType::kDynamic);
    if (!n)
      dynamic.push_back(cast<Value>(size));
  }
  return memref::AllocOp::create(b, loc, MemRefType::get(sizes, element), dynamic);
}

void buildBlockLoop(OpBuilder &b, Location loc, OpFoldResult items, int64_t threads,
                    int64_t maxGridX, TypeRange workgroupBuffers,
                    function_ref<void(OpBuilder &, Value, Value, ValueRange)> body) {
  auto c = [&](OpBuilder &ob, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(ob, loc, v);
  };
  HostSizes sizes(b, loc);
  OpFoldResult grid = sizes.min(items, b.getIndexAttr(maxGridX));
  auto launch = gpu::LaunchOp::create(b, loc, indexValue(b, loc, grid), c(b, 1), c(b, 1),
                                      c(b, threads), c(b, 1), c(b, 1),
                                      /*dynamicSharedMemorySize=*/nullptr,
                                      /*asyncTokenType=*/nullptr, /*asyncDependencies=*/{},
                                      workgroupBuffers);
  OpBuilder lb = OpBuilder::atBlockBegin(&launch.getBody().front());
  Value tid = launch.getThreadIds().x;
  SmallVector<Value> buffers(launch.getWorkgroupAttributions());
  scf::ForOp::create(lb, loc, launch.getBlockIds().x, indexValue(lb, loc, items),
                     indexValue(lb, loc, grid), ValueRange{},
                     [&](OpBuilder &fb, Location, Value item, ValueRange) {
                       body(fb, item, tid, buffers);
                       scf::YieldOp::create(fb, loc);
                     });
  gpu::TerminatorOp::create(lb, loc);
}

} // namespace kiln
