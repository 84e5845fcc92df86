//===- Elementwise.cpp - kiln elementwise ops and generators -> linalg ---===//
#include "Patterns.h"
#include "kiln/Dialect/KilnOps.h"
#include "kiln/Lowering/KilnToLinalg/ScalarOps.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>
#include <numbers>

using namespace mlir;

namespace kiln::to_linalg {
namespace {

/// Every elementwise kiln op becomes one broadcasting linalg.generic whose body
/// is the op's scalar semantics; fusion later merges chains of them.
struct ElementwiseToGeneric : ConversionPattern {
  ElementwiseToGeneric(TypeConverter &converter, MLIRContext *ctx)
      : ConversionPattern(converter, MatchAnyOpTypeTag(), 1, ctx) {}

  LogicalResult
  matchAndRewrite(Operation *op, ArrayRef<Value> operands,
                  ConversionPatternRewriter &rewriter) const override {
    if (op->getDialect()->getNamespace() != "kiln" || !isElementwiseKilnOp(op))
      return failure();
    auto resultType = signlessTensorType(op->getResult(0).getType());
    Value result = buildElementwise(
        rewriter, op->getLoc(), resultType.getShape(),
        resultType.getElementType(), operands,
        [&](OpBuilder &b, Location loc, ValueRange args) {
          return emitElementwise(b, loc, op, args);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct FillToLinalg : OpConversionPattern<FillOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(FillOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value value = scalarConstant(rewriter, loc, op.getType().getElementType(),
                                 op.getValue().convertToDouble());
    auto type = signlessTensorType(op.getType());
    Value empty = emptyTensor(rewriter, loc, type.getShape(), type.getElementType(),
                              sizelessDynamicSizes(rewriter, op));
    rewriter.replaceOp(op, linalg::FillOp::create(rewriter, loc, value, empty));
    return success();
  }
};

/// The linear (row-major) index of the current element of a generic over
/// `shape`, whose `?` dims are `dynamicSizes`.
Value linearIndex(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                  ValueRange dynamicSizes) {
  Value linear = arith::ConstantIndexOp::create(b, loc, 0);
  auto next = dynamicSizes.begin();
  for (auto [d, size] : llvm::enumerate(shape)) {
    Value idx = linalg::IndexOp::create(b, loc, d);
    Value extent = ShapedType::isDynamic(size)
                       ? *next++
                       : Value(arith::ConstantIndexOp::create(b, loc, size));
    linear = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, linear, extent), idx);
  }
  // Zero-extend: the index is never negative, and lavapipe miscompiles the
  // OpSConvert that a signed index_cast becomes on 32-bit SPIR-V indices.
  return arith::IndexCastUIOp::create(b, loc, b.getI64Type(), linear);
}

struct IotaToLinalg : OpConversionPattern<IotaOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(IotaOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type kilnElem = op.getType().getElementType();
    auto type = signlessTensorType(op.getType());
    Value result = buildElementwise(
        rewriter, op.getLoc(), type.getShape(), type.getElementType(), {},
        [&](OpBuilder &b, Location loc, ValueRange) {
          // Zero-extended, as in linearIndex.
          Value idx = arith::IndexCastUIOp::create(
              b, loc, b.getI64Type(),
              linalg::IndexOp::create(b, loc, op.getDim()));
          return castScalar(b, loc, idx, b.getI64Type(), kilnElem);
        },
        sizelessDynamicSizes(rewriter, op));
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Uniform in [0, 1) from the top 24 (f32 and narrower) or 53 (f64) bits.
Value unitUniform(OpBuilder &b, Location loc, Value w0, Value w1, Type t) {
  Type i64 = b.getI64Type();
  if (t.isF64()) {
    Value hi = arith::ShLIOp::create(
        b, loc, arith::ExtUIOp::create(b, loc, i64, w0),
        arith::ConstantIntOp::create(b, loc, i64, 21));
    Value lo = arith::ShRUIOp::create(
        b, loc, arith::ExtUIOp::create(b, loc, i64, w1),
        arith::ConstantIntOp::create(b, loc, i64, 11));
    Value bits = arith::OrIOp::create(b, loc, hi, lo);
    Value f = arith::UIToFPOp::create(b, loc, t, bits);
    return arith::MulFOp::create(
        b, loc, f,
        arith::ConstantOp::create(b, loc, t, b.getFloatAttr(t, 0x1.0p-53)));
  }
  Type f32 = b.getF32Type();
  Value bits = arith::ShRUIOp::create(
      b, loc, w0, arith::ConstantIntOp::create(b, loc, b.getI32Type(), 8));
  Value f = arith::UIToFPOp::create(b, loc, f32, bits);
  return arith::MulFOp::create(
      b, loc, f,
      arith::ConstantOp::create(b, loc, f32, b.getFloatAttr(f32, 0x1.0p-24)));
}

/// A standard normal sample from Philox words, bit-identical on every target:
/// Box-Muller with log, sqrt and cos computed here from integer operations,
/// exact int->float conversions and IEEE add/sub/mul only (no division, no
/// target math library; SPIR-V kernels forbid contraction), so nothing is
/// left that targets may evaluate differently. `t` is f32 or f64 (uniforms
/// of 24 or 53 bits).
Value standardNormal(OpBuilder &b, Location loc, std::array<Value, 4> w,
                     FloatType t) {
  bool f64 = t.isF64();
  unsigned mant = f64 ? 52 : 23, bias = f64 ? 1023 : 127, bits = mant + 1;
  Type it = b.getIntegerType(f64 ? 64 : 32);
  auto fc = [&](double v) -> Value {
    return arith::ConstantOp::create(b, loc, t, b.getFloatAttr(t, v));
  };
  auto ic = [&](int64_t v) -> Value {
    return arith::ConstantOp::create(b, loc, it, b.getIntegerAttr(it, v));
  };
  auto add = [&](Value x, Value y) -> Value {
    return arith::AddFOp::create(b, loc, x, y);
  };
  auto mul = [&](Value x, Value y) -> Value {
    return arith::MulFOp::create(b, loc, x, y);
  };
  auto horner = [&](Value x, ArrayRef<double> coefficients) {
    Value p = fc(coefficients.back());
    for (double c : llvm::reverse(coefficients.drop_back()))
      p = add(fc(c), mul(x, p));
    return p;
  };
  // Two uniform integers of `bits` bits: one for the radius, one for the
  // angle (f64 takes the block's other two words).
  auto uniformBits = [&](Value hi, Value lo) -> Value {
    if (!f64)
      return arith::ShRUIOp::create(b, loc, hi, arith::ConstantIntOp::create(
                                                     b, loc, b.getI32Type(), 8));
    Value h = arith::ShLIOp::create(b, loc, arith::ExtUIOp::create(b, loc, it, hi),
                                    ic(21));
    Value l = arith::ShRUIOp::create(b, loc, arith::ExtUIOp::create(b, loc, it, lo),
                                     ic(11));
    return arith::OrIOp::create(b, loc, h, l);
  };
  Value k0 = f64 ? uniformBits(w[0], w[1]) : uniformBits(w[0], w[0]);
  Value k1 = f64 ? uniformBits(w[2], w[3]) : uniformBits(w[1], w[1]);

  // log(u1) for u1 = n / 2^bits in (0, 1]: n = m * 2^e, m in [sqrt(1/2),
  // sqrt(2)), read off n's exactly converted bits; log(m) by its series.
  Value n = arith::SubIOp::create(b, loc, ic(int64_t(1) << bits), k0);
  Value nBits = arith::BitcastOp::create(b, loc, it,
                                         arith::UIToFPOp::create(b, loc, t, n));
  Value e = arith::SubIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, nBits, ic(mant)), ic(bias));
  Value m = arith::BitcastOp::create(
      b, loc, t,
      arith::OrIOp::create(
          b, loc, arith::AndIOp::create(b, loc, nBits, ic((int64_t(1) << mant) - 1)),
          ic(int64_t(bias) << mant)));
  Value big = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, m,
                                    fc(std::numbers::sqrt2));
  m = arith::SelectOp::create(b, loc, big, mul(m, fc(0.5)), m);
  e = arith::SelectOp::create(b, loc, big, arith::AddIOp::create(b, loc, e, ic(1)), e);
  Value x = arith::SubFOp::create(b, loc, m, fc(1.0));
  SmallVector<double> log1p; // log(1 + x) = x * (1 - x/2 + x^2/3 - ...)
  for (int k = 1; k <= (f64 ? 42 : 18); ++k)
    log1p.push_back((k % 2 ? 1.0 : -1.0) / k);
  Value scale = arith::SIToFPOp::create(
      b, loc, t, arith::SubIOp::create(b, loc, e, ic(bits)));
  Value logU = add(mul(scale, fc(std::numbers::ln2)), mul(x, horner(x, log1p)));

  // sqrt(r), r = -2 log(u1) >= 0, as r * rsqrt(r): Newton from the
  // exponent-halving guess.
  Value r = mul(logU, fc(-2.0));
  Value y = arith::BitcastOp::create(
      b, loc, t,
      arith::SubIOp::create(
          b, loc, ic(f64 ? 0x5FE6EB50C7B537A9 : 0x5F3759DF),
          arith::ShRUIOp::create(b, loc, arith::BitcastOp::create(b, loc, it, r),
                                 ic(1))));
  Value halfR = mul(r, fc(0.5));
  for (int i = 0; i < (f64 ? 4 : 3); ++i)
    y = mul(y, arith::SubFOp::create(b, loc, fc(1.5), mul(halfR, mul(y, y))));
  // r = 0 (u1 = 1) overflows y * y: its root is 0.
  Value radius = arith::SelectOp::create(
      b, loc, arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, r, fc(0.0)),
      fc(0.0), mul(r, y));

  // cos(2 pi k1 / 2^bits): the quadrant and the angle within [-pi/4, pi/4]
  // come from k1's integer bits exactly.
  Value shifted = arith::AddIOp::create(b, loc, k1, ic(int64_t(1) << (bits - 3)));
  Value quadrant = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, shifted, ic(bits - 2)), ic(3));
  Value rest = arith::SubIOp::create(
      b, loc,
      arith::AndIOp::create(b, loc, shifted, ic((int64_t(1) << (bits - 2)) - 1)),
      ic(int64_t(1) << (bits - 3)));
  Value a = mul(arith::SIToFPOp::create(b, loc, t, rest),
                fc(2 * std::numbers::pi / std::ldexp(1.0, bits)));
  Value a2 = mul(a, a);
  SmallVector<double> sinTerms, cosTerms; // in a^2
  double factorial = 1;
  for (int k = 0; k <= (f64 ? 20 : 12); ++k) {
    if (k > 0)
      factorial *= k;
    double term = ((k / 2) % 2 ? -1.0 : 1.0) / factorial;
    (k % 2 ? sinTerms : cosTerms).push_back(term);
  }
  Value sinA = mul(a, horner(a2, sinTerms));
  Value cosA = horner(a2, cosTerms);
  auto isQuadrant = [&](int q) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, quadrant, ic(q));
  };
  Value cos = arith::SelectOp::create(
      b, loc, isQuadrant(0), cosA,
      arith::SelectOp::create(
          b, loc, isQuadrant(1), arith::NegFOp::create(b, loc, sinA),
          arith::SelectOp::create(b, loc, isQuadrant(2),
                                  arith::NegFOp::create(b, loc, cosA), sinA)));
  return mul(radius, cos);
}

template <typename OpT>
struct RandomToLinalg : OpConversionPattern<OpT> {
  using OpConversionPattern<OpT>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpT op, typename OpT::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    Type elem = type.getElementType();
    Type compute = elem.isF64() ? elem : rewriter.getF32Type();
    Value seed = adaptor.getSeed();
    SmallVector<Value> sizes = sizelessDynamicSizes(rewriter, op);
    Value result = buildElementwise(
        rewriter, op.getLoc(), type.getShape(), elem, {},
        [&](OpBuilder &b, Location loc, ValueRange) {
          Value seedScalar = tensor::ExtractOp::create(b, loc, seed, ValueRange{});
          std::array<Value, 4> words =
              emitPhilox(b, loc, linearIndex(b, loc, type.getShape(), sizes), seedScalar);
          auto c = [&](double v) {
            return arith::ConstantOp::create(b, loc, compute,
                                             b.getFloatAttr(compute, v));
          };
          Value r;
          if constexpr (std::is_same_v<OpT, RandomUniformOp>) {
            double low = op.getLow().convertToDouble();
            double high = op.getHigh().convertToDouble();
            Value u = unitUniform(b, loc, words[0], words[1], compute);
            r = arith::AddFOp::create(
                b, loc, c(low), arith::MulFOp::create(b, loc, u, c(high - low)));
          } else {
            Value z = standardNormal(b, loc, words, cast<FloatType>(compute));
            r = arith::AddFOp::create(
                b, loc, c(op.getMean().convertToDouble()),
                arith::MulFOp::create(b, loc, z,
                                      c(op.getStd().convertToDouble())));
          }
          return r.getType() == elem
                     ? r
                     : castScalar(b, loc, r, r.getType(), elem);
        },
        sizes);
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void populateElementwisePatterns(TypeConverter &converter,
                                 RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<ElementwiseToGeneric>(converter, ctx);
  patterns.add<FillToLinalg, IotaToLinalg, RandomToLinalg<RandomUniformOp>,
               RandomToLinalg<RandomNormalOp>>(converter, ctx);
}

} // namespace kiln::to_linalg
