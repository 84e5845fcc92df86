//===- CpuAttention.cpp - what both CPU attention kernels build with -----===//
//
// AttentionVectors (CpuAttention.h): the vectors, the scores' mask, the
// online softmax's step and the output that the blocks kernel
// (CpuAttentionBlocks.cpp) and the rows kernel (CpuAttentionRows.cpp)
// share.
//
//===----------------------------------------------------------------------===//
#include "CpuAttention.h"

#include "kiln/Lowering/Common/MatmulKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>
#include <numeric>

using namespace mlir;
using kiln::IndexBuilder;

kiln::AttentionVectors kiln::AttentionVectors::of(kernel::AttentionOp op, int64_t lanes) {
  Type f32 = Float32Type::get(op.getContext());
  return {op,
          lanes,
          op.getLoc(),
          f32,
          cast<MemRefType>(op.getQ().getType()).getElementType(),
          VectorType::get({lanes}, f32)};
}

Value kiln::AttentionVectors::f32Const(OpBuilder &b, double v) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
}

Value kiln::AttentionVectors::splat(OpBuilder &b, Value scalar) {
  return vector::BroadcastOp::create(b, loc, vec, scalar);
}

Value kiln::AttentionVectors::broadcastIndex(OpBuilder &b, Value index) {
  return vector::BroadcastOp::create(b, loc, VectorType::get({lanes}, b.getIndexType()), index);
}

Value kiln::AttentionVectors::widen(OpBuilder &b, Value v) {
  Type to = isa<VectorType>(v.getType()) ? Type(vec) : f32;
  return v.getType() == to ? v : arith::ExtFOp::create(b, loc, to, v);
}

Value kiln::AttentionVectors::loadVector(OpBuilder &b, Value buffer, ValueRange at) {
  Type stored = cast<MemRefType>(buffer.getType()).getElementType();
  return widen(b, vector::LoadOp::create(b, loc, VectorType::get({lanes}, stored), buffer, at));
}

Value kiln::AttentionVectors::applyMask(OpBuilder &b, Value s, Value n, Value i, Value j0,
                                        Value keys) {
  Value mask = op.getMask();
  if (!mask)
    return s;
  auto type = cast<MemRefType>(mask.getType());
  IndexBuilder x{b, loc};
  Value last = arith::SubIOp::create(b, loc, keys, x.c(1));
  auto at = [&](Value j) {
    return SmallVector<Value>{type.getDimSize(0) == 1 ? x.c(0) : n,
                              type.getDimSize(1) == 1 ? x.c(0) : i,
                              type.getDimSize(2) == 1 ? x.c(0) : j};
  };
  SmallVector<Value> bits;
  if (type.getDimSize(2) == 1) {
    bits.assign(lanes, memref::LoadOp::create(b, loc, mask, at(x.c(0))));
  } else {
    for (int64_t jj = 0; jj < lanes; ++jj)
      bits.push_back(memref::LoadOp::create(
          b, loc, mask, at(arith::MinUIOp::create(b, loc, x.add(j0, jj), last))));
  }
  Type bitType = type.getElementType();
  Value values = vector::FromElementsOp::create(b, loc, VectorType::get({lanes}, bitType), bits);
  if (bitType.isInteger(1))
    return arith::SelectOp::create(b, loc, values, s,
                                   splat(b, f32Const(b, -std::numeric_limits<double>::infinity())));
  return arith::AddFOp::create(b, loc, s, widen(b, values));
}

Value kiln::AttentionVectors::laneIndices(OpBuilder &b) {
  SmallVector<int64_t> ids(lanes);
  std::iota(ids.begin(), ids.end(), 0);
  auto type = VectorType::get({lanes}, b.getIndexType());
  return arith::ConstantOp::create(b, loc, DenseElementsAttr::get(type, ArrayRef<int64_t>(ids)));
}

void kiln::AttentionVectors::forEachVector(OpBuilder &b, Value end, int64_t step,
                                           function_ref<void(OpBuilder &, Value)> body) {
  IndexBuilder x{b, loc};
  scf::ForOp::create(b, loc, x.c(0), end, x.c(step * lanes), ValueRange{},
                     [&](OpBuilder &fb, Location, Value at, ValueRange) {
                       body(fb, at);
                       scf::YieldOp::create(fb, loc);
                     });
}

Value kiln::AttentionVectors::scoresOf(OpBuilder &b, Value dots, Value n, Value i, Value from,
                                       Value keys, Value limit, Value laneIds) {
  Value s =
      arith::MulFOp::create(b, loc, dots, splat(b, f32Const(b, op.getScale().convertToDouble())));
  s = applyMask(b, s, n, i, from, keys);
  Value keyIds = arith::AddIOp::create(b, loc, broadcastIndex(b, from), laneIds);
  Value seen =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, keyIds, broadcastIndex(b, limit));
  return arith::SelectOp::create(b, loc, seen, s,
                                 splat(b, f32Const(b, -std::numeric_limits<double>::infinity())));
}

kiln::AttentionVectors::SoftmaxStep
kiln::AttentionVectors::softmaxStep(OpBuilder &b, ArrayRef<Value> scores, Value max, Value total,
                                    function_ref<void(OpBuilder &, int64_t, Value)> park) {
  Value blockMax = scores[0];
  for (Value s : scores.drop_front())
    blockMax = arith::MaximumFOp::create(b, loc, blockMax, s);
  blockMax = vector::ReductionOp::create(b, loc, vector::CombiningKind::MAXIMUMF, blockMax);
  Value m = arith::MaximumFOp::create(b, loc, max, blockMax);
  // No key seen yet: exponents against 0 give p = 0 and alpha = 0.
  Value none = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, m,
                                     f32Const(b, -std::numeric_limits<double>::infinity()));
  Value shift = arith::SelectOp::create(b, loc, none, f32Const(b, 0), m);
  Value alpha = math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, max, shift));
  Value blockSum;
  for (auto [v, s] : llvm::enumerate(scores)) {
    Value p = math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, s, splat(b, shift)));
    blockSum = v ? arith::AddFOp::create(b, loc, blockSum, p) : p;
    if (element != f32)
      p = arith::TruncFOp::create(b, loc, VectorType::get({lanes}, element), p);
    park(b, v, p);
  }
  blockSum = vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD, blockSum);
  return {m, alpha,
          arith::AddFOp::create(b, loc, arith::MulFOp::create(b, loc, total, alpha), blockSum)};
}

Value kiln::AttentionVectors::outputOf(OpBuilder &b, Value sums, Value total, Value noKeys) {
  Value o = arith::DivFOp::create(b, loc, sums, splat(b, total));
  o = arith::SelectOp::create(b, loc, noKeys, splat(b, f32Const(b, 0)), o);
  Type stored = cast<MemRefType>(op.getOut().getType()).getElementType();
  return stored == f32 ? o : arith::TruncFOp::create(b, loc, VectorType::get({lanes}, stored), o);
}

SmallVector<Value> kiln::AttentionVectors::updateSpan(
    OpBuilder &b, Value count, int64_t span, ValueRange sums,
    function_ref<SmallVector<Value>(OpBuilder &)> whole,
    function_ref<void(OpBuilder &, Value, MutableArrayRef<Value>)> addKey) {
  IndexBuilder x{b, loc};
  auto ifWhole =
      scf::IfOp::create(b, loc, TypeRange(sums),
                        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, count, x.c(span)),
                        /*withElseRegion=*/true);
  OpBuilder tb = ifWhole.getThenBodyBuilder();
  scf::YieldOp::create(tb, loc, whole(tb));
  OpBuilder eb = ifWhole.getElseBodyBuilder();
  IndexBuilder e{eb, loc};
  auto byKey = scf::ForOp::create(eb, loc, e.c(0), count, e.c(1), sums,
                                  [&](OpBuilder &fb, Location, Value jj, ValueRange carried) {
                                    SmallVector<Value> into(carried);
                                    addKey(fb, jj, into);
                                    scf::YieldOp::create(fb, loc, into);
                                  });
  scf::YieldOp::create(eb, loc, byKey.getResults());
  return SmallVector<Value>(ifWhole.getResults());
}
