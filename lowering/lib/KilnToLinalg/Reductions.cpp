//===- Reductions.cpp - kiln reductions, scans and row-wise ops -> linalg -===//
#include "Patterns.h"
#include "kiln/Dialect/KilnOps.h"
#include "kiln/Lowering/KilnToLinalg/ScalarOps.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/TypeSwitch.h"

#include <limits>

using namespace mlir;

namespace kiln::to_linalg {
namespace {

/// Widens f16/bf16 to f32 so that reductions accumulate in f32.
Value widened(OpBuilder &b, Location loc, Value x, Type kilnElem) {
  Type compute = computeFloatType(kilnElem);
  if (compute == kilnElem)
    return x;
  auto shape = cast<RankedTensorType>(x.getType()).getShape();
  return buildElementwise(b, loc, shape, compute, x,
                          [&](OpBuilder &nb, Location l, ValueRange a) {
                            return castScalar(nb, l, a[0], kilnElem, compute);
                          });
}

Value narrowed(OpBuilder &b, Location loc, Value x, Type kilnElem) {
  auto type = cast<RankedTensorType>(x.getType());
  if (type.getElementType() == signlessType(kilnElem))
    return x;
  Type from = type.getElementType();
  return buildElementwise(b, loc, type.getShape(), signlessType(kilnElem), x,
                          [&](OpBuilder &nb, Location l, ValueRange a) {
                            return castScalar(nb, l, a[0], from, kilnElem);
                          });
}

enum class Combiner { Sum, Prod, Max, Min, Any, All };

Value identity(OpBuilder &b, Location loc, Combiner kind, Type accType,
               bool isUnsigned) {
  if (kind == Combiner::Any || kind == Combiner::All)
    return arith::ConstantIntOp::create(b, loc, b.getI1Type(),
                                        kind == Combiner::All);
  if (auto ft = dyn_cast<FloatType>(accType)) {
    double inf = std::numeric_limits<double>::infinity();
    double v = kind == Combiner::Sum ? 0.0
               : kind == Combiner::Prod ? 1.0
               : kind == Combiner::Max  ? -inf
                                        : inf;
    return arith::ConstantOp::create(b, loc, ft, b.getFloatAttr(ft, v));
  }
  unsigned w = accType.getIntOrFloatBitWidth();
  APInt v = kind == Combiner::Sum    ? APInt(w, 0)
            : kind == Combiner::Prod ? APInt(w, 1)
            : kind == Combiner::Max
                ? (isUnsigned ? APInt::getMinValue(w) : APInt::getSignedMinValue(w))
                : (isUnsigned ? APInt::getMaxValue(w) : APInt::getSignedMaxValue(w));
  return arith::ConstantOp::create(b, loc, accType, b.getIntegerAttr(accType, v));
}

Value combine(OpBuilder &b, Location loc, Combiner kind, Value x, Value acc,
              bool isUnsigned) {
  bool isFloat = isa<FloatType>(acc.getType());
  // Reassociation lets the vectoriser split float sums into lanes.
  auto fm = arith::FastMathFlagsAttr::get(b.getContext(),
                                          arith::FastMathFlags::reassoc);
  switch (kind) {
  case Combiner::Sum:
    return isFloat ? Value(arith::AddFOp::create(b, loc, x, acc, fm))
                   : Value(arith::AddIOp::create(b, loc, x, acc));
  case Combiner::Prod:
    return isFloat ? Value(arith::MulFOp::create(b, loc, x, acc, fm))
                   : Value(arith::MulIOp::create(b, loc, x, acc));
  case Combiner::Max:
    if (isFloat)
      return arith::MaximumFOp::create(b, loc, x, acc);
    return isUnsigned ? Value(arith::MaxUIOp::create(b, loc, x, acc))
                      : Value(arith::MaxSIOp::create(b, loc, x, acc));
  case Combiner::Min:
    if (isFloat)
      return arith::MinimumFOp::create(b, loc, x, acc);
    return isUnsigned ? Value(arith::MinUIOp::create(b, loc, x, acc))
                      : Value(arith::MinSIOp::create(b, loc, x, acc));
  case Combiner::Any:
    return arith::OrIOp::create(b, loc, x, acc);
  case Combiner::All:
    return arith::AndIOp::create(b, loc, x, acc);
  }
  llvm_unreachable("combiner");
}

/// Reduces kiln tensor `x` (converted value `input`) over `dims`; the result
/// is in the accumulator type (f32 for f16/bf16, i1 for any/all).
Value reduce(OpBuilder &b, Location loc, Value input, Type kilnElem,
             ArrayRef<int64_t> dims, Combiner kind) {
  bool isUnsigned = isUnsignedKilnType(kilnElem);
  Value source = input;
  if (kind == Combiner::Any || kind == Combiner::All) {
    auto shape = cast<RankedTensorType>(input.getType()).getShape();
    source = buildElementwise(b, loc, shape, b.getI1Type(), input,
                              [&](OpBuilder &nb, Location l, ValueRange a) {
                                return castScalar(nb, l, a[0], kilnElem,
                                                  nb.getI1Type());
                              });
  } else {
    source = widened(b, loc, input, kilnElem);
  }
  Type accType = cast<RankedTensorType>(source.getType()).getElementType();
  Value init = identity(b, loc, kind, accType, isUnsigned);
  return buildReduction(b, loc, source, dims, init,
                        [&](OpBuilder &nb, Location l, Value x, Value acc) {
                          return combine(nb, l, kind, x, acc, isUnsigned);
                        });
}

Value fconst(OpBuilder &b, Location loc, Type t, double v) {
  return arith::ConstantOp::create(b, loc, t, b.getFloatAttr(t, v));
}

/// A statistic's division (a sum by its count, 1 by a row's sum or standard
/// deviation) may be approximate (`afn`): CUDA then divides without IEEE
/// division's out-of-line slow path, whose call costs a row kernel
/// registers and with them occupancy. The sum divided is already rounded
/// differently on each target (docs/precision.md); divisors are counts,
/// sums of at least 1 and deviations, all in div.approx's normal range.
Value statisticDivision(OpBuilder &b, Location loc, Value x, Value y) {
  return arith::DivFOp::create(
      b, loc, x, y, arith::FastMathFlagsAttr::get(b.getContext(), arith::FastMathFlags::afn));
}

template <typename OpT, Combiner kind, bool isMean = false>
struct ReduceToGeneric : OpConversionPattern<OpT> {
  using OpConversionPattern<OpT>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpT op, typename OpT::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto inType = op.getX().getType();
    Type kilnElem = inType.getElementType();
    Value r = reduce(rewriter, loc, adaptor.getX(), kilnElem, op.getDims(), kind);
    if constexpr (isMean) {
      auto shape = cast<RankedTensorType>(r.getType()).getShape();
      Type acc = cast<RankedTensorType>(r.getType()).getElementType();
      Value count = fconst(rewriter, loc, acc, 1.0);
      for (int64_t d : op.getDims())
        count = arith::MulFOp::create(rewriter, loc, count,
                                      dimSizeAsFloat(rewriter, loc, adaptor.getX(), d, acc));
      r = buildElementwise(rewriter, loc, shape, acc, r,
                           [&](OpBuilder &b, Location l, ValueRange a) {
                             return statisticDivision(b, l, a[0], count);
                           });
    }
    if (kind != Combiner::Any && kind != Combiner::All)
      r = narrowed(rewriter, loc, r, kilnElem);
    if (op.getKeepDims())
      r = expandKeptDims(rewriter, loc, r, op.getDims(), inType.getShape());
    rewriter.replaceOp(op, r);
    return success();
  }
};

/// argmax/argmin: one reduction carrying (best value, its index); the first
/// occurrence wins and NaN counts as the extreme, as in PyTorch.
template <typename OpT, bool isMax>
struct ArgToGeneric : OpConversionPattern<OpT> {
  using OpConversionPattern<OpT>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpT op, typename OpT::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    auto inType = op.getX().getType();
    Type kilnElem = inType.getElementType();
    bool isUnsigned = isUnsignedKilnType(kilnElem);
    Value x = widened(rewriter, loc, adaptor.getX(), kilnElem);
    Type acc = cast<RankedTensorType>(x.getType()).getElementType();
    int64_t rank = inType.getRank(), dim = op.getDim();
    SmallVector<int64_t> outShape, kept;
    SmallVector<AffineExpr> outExprs;
    SmallVector<utils::IteratorType> iterators;
    for (int64_t d = 0; d < rank; ++d) {
      iterators.push_back(d == dim ? utils::IteratorType::reduction
                                   : utils::IteratorType::parallel);
      if (d != dim) {
        outShape.push_back(inType.getDimSize(d));
        outExprs.push_back(getAffineDimExpr(d, ctx));
        kept.push_back(d);
      }
    }
    SmallVector<Value> sizes = dynamicDimSizes(rewriter, loc, x, kept);
    Type i64 = rewriter.getI64Type();
    Value bestInit = identity(rewriter, loc, isMax ? Combiner::Max : Combiner::Min,
                              acc, isUnsigned);
    Value best = linalg::FillOp::create(rewriter, loc, bestInit,
                                        emptyTensor(rewriter, loc, outShape, acc, sizes))
                     .getResult(0);
    Value index = linalg::FillOp::create(
                      rewriter, loc,
                      Value(arith::ConstantIntOp::create(rewriter, loc, i64, 0)),
                      emptyTensor(rewriter, loc, outShape, i64, sizes))
                      .getResult(0);
    AffineMap outMap = AffineMap::get(rank, 0, outExprs, ctx);
    SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(rank, ctx),
                                   outMap, outMap};
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{best.getType(), index.getType()}, x,
        ValueRange{best, index}, maps, iterators,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value v = args[0], cur = args[1], curIdx = args[2];
          Value better;
          if (isa<FloatType>(acc)) {
            better = arith::CmpFOp::create(
                b, l, isMax ? arith::CmpFPredicate::OGT : arith::CmpFPredicate::OLT,
                v, cur);
            Value vNan = arith::CmpFOp::create(b, l, arith::CmpFPredicate::UNO, v, v);
            Value curNan =
                arith::CmpFOp::create(b, l, arith::CmpFPredicate::UNO, cur, cur);
            Value notCurNan = arith::XOrIOp::create(
                b, l, curNan, arith::ConstantIntOp::create(b, l, b.getI1Type(), 1));
            better = arith::OrIOp::create(
                b, l, better, arith::AndIOp::create(b, l, vNan, notCurNan));
          } else {
            using P = arith::CmpIPredicate;
            P p = isMax ? (isUnsigned ? P::ugt : P::sgt)
                        : (isUnsigned ? P::ult : P::slt);
            better = arith::CmpIOp::create(b, l, p, v, cur);
          }
          // The first element always wins, so an all-(-inf) row gives 0.
          Value pos = linalg::IndexOp::create(b, l, dim);
          Value first = arith::CmpIOp::create(
              b, l, arith::CmpIPredicate::eq, pos,
              arith::ConstantIndexOp::create(b, l, 0));
          better = arith::OrIOp::create(b, l, better, first);
          Value posI64 = arith::IndexCastUIOp::create(b, l, i64, pos);
          linalg::YieldOp::create(
              b, l,
              ValueRange{arith::SelectOp::create(b, l, better, v, cur),
                         arith::SelectOp::create(b, l, better, posI64, curIdx)});
        });
    Value r = generic.getResult(1);
    if (op.getKeepDims())
      r = expandKeptDims(rewriter, loc, r, {dim}, inType.getShape());
    rewriter.replaceOp(op, r);
    return success();
  }
};

/// cumsum runs along `dim` in order: a loop nest over the other dims around a
/// serial scan carrying the running sum (f32 for f16/bf16).
struct CumsumToLoops : OpConversionPattern<CumsumOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CumsumOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = op.getX().getType();
    Type kilnElem = type.getElementType();
    Type elem = signlessType(kilnElem);
    Type acc = isa<FloatType>(kilnElem) ? computeFloatType(kilnElem) : elem;
    int64_t dim = op.getDim();
    Value x = adaptor.getX();
    SmallVector<Value> sizes, dynamic;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      sizes.push_back(dimSize(rewriter, loc, x, d));
      if (type.isDynamicDim(d))
        dynamic.push_back(sizes.back());
    }
    Value out = emptyTensor(rewriter, loc, type.getShape(), elem, dynamic);
    auto c = [&](int64_t v) {
      return arith::ConstantIndexOp::create(rewriter, loc, v);
    };
    SmallVector<Value> lbs, ubs, steps;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      if (d == dim)
        continue;
      lbs.push_back(c(0));
      ubs.push_back(sizes[d]);
      steps.push_back(c(1));
    }
    Value zero = scalarConstant(rewriter, loc, acc, 0.0);
    Value lb = c(0), ub = sizes[dim], step = c(1);
    scf::LoopNest nest = scf::buildLoopNest(
        rewriter, loc, lbs, ubs, steps, ValueRange{out},
        [&](OpBuilder &b, Location l, ValueRange ivs, ValueRange iters) {
          auto scan = scf::ForOp::create(
              b, l, lb, ub, step, ValueRange{iters[0], zero},
              [&](OpBuilder &ib, Location il, Value iv, ValueRange state) {
                SmallVector<Value> at(ivs.begin(), ivs.end());
                at.insert(at.begin() + dim, iv);
                Value v = tensor::ExtractOp::create(ib, il, x, at);
                Value sum;
                if (isa<FloatType>(acc))
                  sum = arith::AddFOp::create(
                      ib, il, state[1], castScalar(ib, il, v, kilnElem, acc));
                else
                  sum = arith::AddIOp::create(ib, il, state[1], v);
                Value stored = isa<FloatType>(acc)
                                   ? castScalar(ib, il, sum, acc, kilnElem)
                                   : sum;
                Value t = tensor::InsertOp::create(ib, il, stored, state[0], at);
                scf::YieldOp::create(ib, il, ValueRange{t, sum});
              });
          return SmallVector<Value>{scan.getResult(0)};
        });
    rewriter.replaceOp(op, nest.results[0]);
    return success();
  }
};

/// softmax / log_softmax: max, then sum of exp(x - max), then the output.
template <typename OpT, bool isLog>
struct SoftmaxToGenerics : OpConversionPattern<OpT> {
  using OpConversionPattern<OpT>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpT op, typename OpT::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type kilnElem = op.getX().getType().getElementType();
    int64_t dim = op.getDim();
    Value x = widened(rewriter, loc, adaptor.getX(), kilnElem);
    Type acc = cast<RankedTensorType>(x.getType()).getElementType();
    Value max = reduce(rewriter, loc, x, acc, {dim}, Combiner::Max);
    Value shifted = buildRowwise(
        rewriter, loc, x, max, dim, acc,
        [](OpBuilder &b, Location l, ValueRange a) {
          return arith::SubFOp::create(b, l, a[0], a[1]);
        });
    Value exps = buildElementwise(
        rewriter, loc, cast<RankedTensorType>(shifted.getType()).getShape(), acc,
        shifted, [](OpBuilder &b, Location l, ValueRange a) {
          return math::ExpOp::create(b, l, a[0]);
        });
    Value sum = reduce(rewriter, loc, exps, acc, {dim}, Combiner::Sum);
    Value r = buildRowwise(
        rewriter, loc, {shifted, exps}, sum, dim, acc,
        [](OpBuilder &b, Location l, ValueRange a) -> Value {
          if (isLog)
            return arith::SubFOp::create(b, l, a[0],
                                         math::LogOp::create(b, l, a[2]));
          // exp * (1 / sum): the reciprocal is the row's, so kernels
          // compute it once per row (docs/precision.md).
          Value one = arith::ConstantOp::create(b, l, a[2].getType(),
                                                b.getFloatAttr(a[2].getType(), 1.0));
          return arith::MulFOp::create(b, l, a[1], statisticDivision(b, l, one, a[2]));
        });
    rewriter.replaceOp(op, narrowed(rewriter, loc, r, kilnElem));
    return success();
  }
};

/// layer_norm and rms_norm over the last dim, statistics in f32 or wider.
template <typename OpT, bool isLayer>
struct NormToGenerics : OpConversionPattern<OpT> {
  using OpConversionPattern<OpT>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpT op, typename OpT::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = op.getX().getType();
    Type kilnElem = type.getElementType();
    int64_t dim = type.getRank() - 1;
    double eps = op.getEps().convertToDouble();
    Value x = widened(rewriter, loc, adaptor.getX(), kilnElem);
    Type acc = cast<RankedTensorType>(x.getType()).getElementType();
    Value count = dimSizeAsFloat(rewriter, loc, x, dim, acc);
    auto shape = type.getShape();
    Value mean;
    Value centered = x;
    if constexpr (isLayer) {
      Value sum = reduce(rewriter, loc, x, acc, {dim}, Combiner::Sum);
      mean = buildElementwise(
          rewriter, loc, cast<RankedTensorType>(sum.getType()).getShape(), acc,
          sum, [&](OpBuilder &b, Location l, ValueRange a) {
            return statisticDivision(b, l, a[0], count);
          });
      centered = buildRowwise(rewriter, loc, x, mean, dim, acc,
                              [](OpBuilder &b, Location l, ValueRange a) {
                                return arith::SubFOp::create(b, l, a[0], a[1]);
                              });
    }
    Value squares = buildElementwise(
        rewriter, loc, shape, acc, centered,
        [](OpBuilder &b, Location l, ValueRange a) {
          return arith::MulFOp::create(b, l, a[0], a[0]);
        });
    Value sumSq = reduce(rewriter, loc, squares, acc, {dim}, Combiner::Sum);
    Value invStd = buildElementwise(
        rewriter, loc, cast<RankedTensorType>(sumSq.getType()).getShape(), acc,
        sumSq, [&](OpBuilder &b, Location l, ValueRange a) {
          Value var = statisticDivision(b, l, a[0], count);
          Value std = math::SqrtOp::create(
              b, l, arith::AddFOp::create(b, l, var, fconst(b, l, acc, eps)));
          return statisticDivision(b, l, fconst(b, l, acc, 1.0), std);
        });
    Value normed = buildRowwise(rewriter, loc, centered, invStd, dim, acc,
                                [](OpBuilder &b, Location l, ValueRange a) {
                                  return arith::MulFOp::create(b, l, a[0], a[1]);
                                });
    SmallVector<Value> params = {normed,
                                 widened(rewriter, loc, adaptor.getWeight(), kilnElem)};
    if constexpr (isLayer)
      params.push_back(widened(rewriter, loc, adaptor.getBias(), kilnElem));
    Value r = buildElementwise(
        rewriter, loc, shape, acc, params,
        [](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value v = arith::MulFOp::create(b, l, a[0], a[1]);
          return isLayer ? Value(arith::AddFOp::create(b, l, v, a[2])) : v;
        });
    rewriter.replaceOp(op, narrowed(rewriter, loc, r, kilnElem));
    return success();
  }
};

} // namespace

void populateReductionPatterns(TypeConverter &converter,
                               RewritePatternSet &patterns) {
  patterns.add<ReduceToGeneric<ReduceSumOp, Combiner::Sum>,
               ReduceToGeneric<ReduceProdOp, Combiner::Prod>,
               ReduceToGeneric<ReduceMeanOp, Combiner::Sum, true>,
               ReduceToGeneric<ReduceMaxOp, Combiner::Max>,
               ReduceToGeneric<ReduceMinOp, Combiner::Min>,
               ReduceToGeneric<ReduceAnyOp, Combiner::Any>,
               ReduceToGeneric<ReduceAllOp, Combiner::All>,
               ArgToGeneric<ArgmaxOp, true>, ArgToGeneric<ArgminOp, false>,
               CumsumToLoops, SoftmaxToGenerics<SoftmaxOp, false>,
               SoftmaxToGenerics<LogSoftmaxOp, true>,
               NormToGenerics<LayerNormOp, true>,
               NormToGenerics<RmsNormOp, false>>(converter,
                                                 patterns.getContext());
}

} // namespace kiln::to_linalg
