//===- CudaAttentionSoftmax.cpp - the attention kernels' online softmax ---===//
#include "CudaAttention.h"
#include "kiln/Lowering/Common/MatmulKernels.h"
#include "kiln/Lowering/Kernels/AttentionFusion.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>

using namespace mlir;

namespace kiln {
namespace {

constexpr double kLog2e = 1.4426950408889634;
constexpr double kMinusInf = -std::numeric_limits<double>::infinity();

Value f32(OpBuilder &b, Location loc, double v) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
}

/// Max or sum of `v` over the 4 lanes of a quad (the lanes holding one row).
Value quadReduce(OpBuilder &b, Location loc, Value v, bool max) {
  for (int32_t offset : {1, 2}) {
    Value other =
        gpu::ShuffleOp::create(b, loc, v, offset, 32, gpu::ShuffleMode::XOR).getShuffleResult();
    v = max ? Value(arith::MaximumFOp::create(b, loc, v, other))
            : Value(arith::AddFOp::create(b, loc, v, other));
  }
  return v;
}

/// 2^x by the SFU (ex2.approx.ftz: 2 ulp, 2^-inf = 0), as flash kernels
/// take their exponentials; math.exp would become a polynomial.
Value exp2(OpBuilder &b, Location loc, Value x) {
  return LLVM::CallIntrinsicOp::create(b, loc, b.getF32Type(),
                                       b.getStringAttr("llvm.nvvm.ex2.approx.ftz.f32"),
                                       ValueRange{x})
      .getResult(0);
}

/// The scores in base 2, masked where `masked`, then the max of rows A and
/// B over the thread's scores: scores..., maxA, maxB.
SmallVector<Value> scoreTile(OpBuilder &b, Location loc, const AttentionFragments &f,
                             ArrayRef<Value> scores, Value key0, bool masked) {
  IndexBuilder x{b, loc};
  kernel::AttentionOp op = f.op;
  Value mask = op.getMask();
  Value scale = f32(b, loc, op.getScale().convertToDouble() * kLog2e);
  Value minus = f32(b, loc, kMinusInf);
  SmallVector<Value> out;
  Value maxA = minus, maxB = minus;
  for (auto [i, raw] : llvm::enumerate(scores)) {
    const int64_t j = i / 4, e = i % 4;
    Value row = e < 2 ? f.rowA : f.rowB;
    Value score = arith::MulFOp::create(b, loc, raw, scale);
    if (masked) {
      Value key = x.add(x.add(key0, x.mul(f.inQuad, 2)), j * 8 + e % 2);
      Value keep = x.lt(key, f.keys);
      if (op.getCausal())
        keep = x.both(keep, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, key, row));
      if (mask) {
        SmallVector<Value> at, ivs{f.batch, row, key};
        for (auto [d, iv] : llvm::enumerate(ivs)) {
          if (dimOf(mask, d) == 1) {
            at.push_back(x.c(0));
            continue;
          }
          at.push_back(x.select(x.lt(iv, sizeValue(b, loc, mask, d)), iv, x.c(0)));
        }
        Value m = memref::LoadOp::create(b, loc, mask, at);
        if (m.getType().isInteger(1))
          keep = x.both(keep, m);
        else
          score = arith::AddFOp::create(
              b, loc, score,
              arith::MulFOp::create(b, loc, arith::ExtFOp::create(b, loc, b.getF32Type(), m),
                                    f32(b, loc, kLog2e)));
      }
      score = x.select(keep, score, minus);
    }
    out.push_back(score);
    Value &max = e < 2 ? maxA : maxB;
    max = arith::MaximumFOp::create(b, loc, max, score);
  }
  out.append({maxA, maxB});
  return out;
}

} // namespace

bool fitsTensorCoreKernel(kernel::AttentionOp op) {
  Type element = cast<MemRefType>(op.getQ().getType()).getElementType();
  auto dense = [](Value v) { return cast<MemRefType>(v.getType()).getLayout().isIdentity(); };
  return fitsTensorCoreAttention(element, dimOf(op.getQ(), 2), dimOf(op.getV(), 2)) &&
         dense(op.getQ()) && dense(op.getK()) && dense(op.getV()) && dense(op.getOut());
}

SoftmaxState SoftmaxState::initial(OpBuilder &b, Location loc) {
  Value minus = f32(b, loc, kMinusInf), zero = f32(b, loc, 0.0);
  return {minus, minus, zero, zero};
}

SoftmaxStep onlineSoftmaxStep(OpBuilder &b, Location loc, const AttentionFragments &f,
                              ArrayRef<Value> raw, Value key0, const SoftmaxState &state) {
  IndexBuilder x{b, loc};
  kernel::AttentionOp op = f.op;
  SmallVector<Value> scores;
  if (op.getMask()) {
    scores = scoreTile(b, loc, f, raw, key0, true);
  } else {
    // Only tiles past the keys' end or (causal) past the warp's first row
    // need the per-element test.
    auto above = [&](Value a, Value c) {
      return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, a, c);
    };
    const int64_t tileKeys = 2 * static_cast<int64_t>(raw.size());
    Value lastKey = x.add(key0, tileKeys - 1);
    Value needsMask = above(x.add(key0, tileKeys), f.keys);
    if (op.getCausal())
      needsMask = arith::OrIOp::create(b, loc, needsMask, above(lastKey, f.warpRow0));
    auto branch = scf::IfOp::create(
        b, loc, needsMask,
        [&](OpBuilder &tb, Location tl) {
          scf::YieldOp::create(tb, tl, scoreTile(tb, tl, f, raw, key0, true));
        },
        [&](OpBuilder &tb, Location tl) {
          scf::YieldOp::create(tb, tl, scoreTile(tb, tl, f, raw, key0, false));
        });
    scores.assign(branch.getResults().begin(), branch.getResults().end());
  }
  Value tileMaxB = scores.pop_back_val(), tileMaxA = scores.pop_back_val();
  Value minus = f32(b, loc, kMinusInf);

  // Per row: a row with no key yet keeps max -inf and subtracts 0 instead,
  // so its probabilities are 0, not NaN.
  SoftmaxStep step;
  Value shifts[2];
  Value oldMax[2] = {state.maxA, state.maxB}, tileMax[2] = {tileMaxA, tileMaxB};
  Value newMax[2], alphas[2];
  for (int r = 0; r < 2; ++r) {
    newMax[r] = arith::MaximumFOp::create(b, loc, oldMax[r], quadReduce(b, loc, tileMax[r], true));
    Value none = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, newMax[r], minus);
    shifts[r] = x.select(none, f32(b, loc, 0.0), newMax[r]);
    alphas[r] = exp2(b, loc, arith::SubFOp::create(b, loc, oldMax[r], shifts[r]));
  }
  Value sums[2] = {arith::MulFOp::create(b, loc, state.sumA, alphas[0]),
                   arith::MulFOp::create(b, loc, state.sumB, alphas[1])};
  for (auto [i, score] : llvm::enumerate(scores)) {
    const int r = (i % 4) / 2;
    step.probs.push_back(exp2(b, loc, arith::SubFOp::create(b, loc, score, shifts[r])));
    sums[r] = arith::AddFOp::create(b, loc, sums[r], step.probs.back());
  }
  step.alphaA = alphas[0];
  step.alphaB = alphas[1];
  step.next = {newMax[0], newMax[1], sums[0], sums[1]};
  return step;
}

SmallVector<Value> probabilityFragment(OpBuilder &b, Location loc, ArrayRef<Value> probs,
                                       int64_t kk, Type element, bool asBits) {
  // Keys 16kk..16kk+15 are C fragments 2kk (keys 0-7) and 2kk + 1 (8-15),
  // each rows A then B: an m16n8 C fragment pair is an m16n8k16 A.
  SmallVector<Value> regs;
  for (int64_t j : {2 * kk, 2 * kk + 1})
    for (int64_t e : {0, 2}) {
      auto pair = vector::FromElementsOp::create(b, loc, VectorType::get({2}, b.getF32Type()),
                                                 ValueRange{probs[j * 4 + e], probs[j * 4 + e + 1]});
      Value rounded = arith::TruncFOp::create(b, loc, VectorType::get({2}, element), pair);
      if (element.isF16() && !asBits) {
        regs.push_back(rounded);
        continue;
      }
      Value word = vector::BitCastOp::create(b, loc, VectorType::get({1}, b.getI32Type()), rounded);
      regs.push_back(vector::ExtractOp::create(b, loc, word, ArrayRef<int64_t>{0}));
    }
  return regs;
}

std::pair<Value, Value> rowSums(OpBuilder &b, Location loc, const SoftmaxState &state) {
  return {quadReduce(b, loc, state.sumA, false), quadReduce(b, loc, state.sumB, false)};
}

void storeOutputPair(OpBuilder &b, Location loc, const AttentionFragments &f, Value row,
                     Value col, Value pair, Value sum) {
  IndexBuilder x{b, loc};
  Value out = kernel::AttentionOp(f.op).getOut();
  Type element = cast<MemRefType>(out.getType()).getElementType();
  auto pairType = VectorType::get({2}, b.getF32Type());
  Value o = arith::DivFOp::create(b, loc, pair, vector::BroadcastOp::create(b, loc, pairType, sum));
  Value noKeys = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, f.keys, x.c(0));
  Value zero = arith::ConstantOp::create(b, loc, pairType, DenseElementsAttr::get(pairType, 0.0f));
  o = x.select(noKeys, zero, o);
  o = arith::TruncFOp::create(b, loc, VectorType::get({2}, element), o);
  scf::IfOp::create(b, loc, x.lt(row, f.rows), [&](OpBuilder &tb, Location l) {
    vector::StoreOp::create(tb, l, o, out, ValueRange{f.batch, row, col});
    scf::YieldOp::create(tb, l);
  });
}

AttentionGrid attentionGrid(OpBuilder &b, Location loc, kernel::AttentionOp op, int64_t rowTile,
                            int64_t keyTile) {
  auto ceilDiv = [&](Value size, int64_t tile) {
    return b.createOrFold<arith::CeilDivSIOp>(loc, size,
                                              arith::ConstantIndexOp::create(b, loc, tile));
  };
  AttentionGrid g;
  g.batch = sizeValue(b, loc, op.getQ(), 0);
  g.rows = sizeValue(b, loc, op.getQ(), 1);
  g.keys = sizeValue(b, loc, op.getK(), 1);
  g.rowTiles = ceilDiv(g.rows, rowTile);
  g.keyTiles = ceilDiv(g.keys, keyTile);
  g.blocks = b.createOrFold<arith::MulIOp>(loc, g.rowTiles, g.batch);
  return g;
}

void eraseReplacedAttention(kernel::AttentionOp op) {
  Value acc = op.getAcc();
  op->erase();
  if (auto alloc = acc.getDefiningOp<memref::AllocOp>(); alloc && alloc->use_empty())
    alloc->erase();
}

} // namespace kiln
