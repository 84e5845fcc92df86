//===- ScalarOps.cpp - scalar semantics of kiln's elementwise ops --------===//
#include "kiln/Lowering/KilnToLinalg/ScalarOps.h"
#include "kiln/Dialect/KilnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <numbers>

using namespace mlir;

namespace kiln {

bool isUnsignedKilnType(Type type) {
  auto intType = dyn_cast<IntegerType>(type);
  return intType && intType.isUnsigned();
}

bool isFloat8(Type type) { return isa<Float8E4M3FNType, Float8E5M2Type>(type); }

Type signlessType(Type type) {
  if (auto intType = dyn_cast<IntegerType>(type))
    return IntegerType::get(type.getContext(), intType.getWidth());
  // f8 values live in kernels as their bit patterns.
  if (isFloat8(type))
    return IntegerType::get(type.getContext(), 8);
  return type;
}

Type computeFloatType(Type type) {
  if (isa<FloatType>(type) && type.getIntOrFloatBitWidth() < 32)
    return Float32Type::get(type.getContext());
  return type;
}

namespace {
bool isBool(Type t) { return t.isInteger(1); }

Value floatConst(OpBuilder &b, Location loc, Type type, double v) {
  return arith::ConstantOp::create(b, loc, type, b.getFloatAttr(type, v));
}
Value intConst(OpBuilder &b, Location loc, Type type, int64_t v) {
  return arith::ConstantOp::create(b, loc, type, b.getIntegerAttr(type, v));
}

Value toComputeFloat(OpBuilder &b, Location loc, Value v) {
  Type t = computeFloatType(v.getType());
  return t == v.getType() ? v : arith::ExtFOp::create(b, loc, t, v);
}
Value fromComputeFloat(OpBuilder &b, Location loc, Value v, Type type) {
  return v.getType() == type ? v : arith::TruncFOp::create(b, loc, type, v);
}

// float -> int with saturation at the integer range and NaN -> 0.
Value floatToInt(OpBuilder &b, Location loc, Value x, Type to, bool isUnsigned) {
  x = toComputeFloat(b, loc, x);
  if (x.getType().getIntOrFloatBitWidth() < 32)
    x = arith::ExtFOp::create(b, loc, b.getF32Type(), x);
  Type ft = x.getType();
  unsigned width = to.getIntOrFloatBitWidth();
  // Powers of two are exact in every float type, so the comparisons are too.
  double hiBound = std::ldexp(1.0, isUnsigned ? width : width - 1);
  double loBound = isUnsigned ? 0.0 : -hiBound;
  Value conv = isUnsigned ? Value(arith::FPToUIOp::create(b, loc, to, x))
                          : Value(arith::FPToSIOp::create(b, loc, to, x));
  APInt maxV = isUnsigned ? APInt::getMaxValue(width)
                          : APInt::getSignedMaxValue(width);
  APInt minV = isUnsigned ? APInt::getMinValue(width)
                          : APInt::getSignedMinValue(width);
  Value maxC = arith::ConstantOp::create(b, loc, to, b.getIntegerAttr(to, maxV));
  Value minC = arith::ConstantOp::create(b, loc, to, b.getIntegerAttr(to, minV));
  Value tooBig = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGE, x,
                                       floatConst(b, loc, ft, hiBound));
  Value tooSmall = arith::CmpFOp::create(
      b, loc, isUnsigned ? arith::CmpFPredicate::OLE : arith::CmpFPredicate::OLT,
      x, floatConst(b, loc, ft, loBound));
  Value isNan =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, x, x);
  Value r = arith::SelectOp::create(b, loc, tooBig, maxC, conv);
  r = arith::SelectOp::create(b, loc, tooSmall, minC, r);
  return arith::SelectOp::create(b, loc, isNan, intConst(b, loc, to, 0), r);
}
// The float format of an f8 type: exponent and mantissa bits, bias, and
// whether it has infinities (E5M2) or uses its top pattern for NaN (E4M3FN).
struct Float8Format {
  unsigned mantissa;
  int bias;
  bool hasInf;
};
Float8Format formatOf(Type t) {
  return isa<Float8E5M2Type>(t) ? Float8Format{2, 15, true}
                                : Float8Format{3, 7, false};
}

/// f8 bits (i8) -> f32, exactly.
Value decodeFloat8(OpBuilder &b, Location loc, Value bits, Type type) {
  Type i32 = b.getI32Type(), f32 = b.getF32Type();
  auto c32 = [&](int64_t v) { return intConst(b, loc, i32, v); };
  if (isa<Float8E5M2Type>(type)) {
    // E5M2 is the top byte of an IEEE half, subnormals, inf and NaN included.
    Value wide = arith::ExtUIOp::create(b, loc, b.getI16Type(), bits);
    Value half = arith::BitcastOp::create(
        b, loc, b.getF16Type(),
        arith::ShLIOp::create(b, loc, wide, intConst(b, loc, b.getI16Type(), 8)));
    return arith::ExtFOp::create(b, loc, f32, half);
  }
  Value u = arith::ExtUIOp::create(b, loc, i32, bits);
  Value sign = arith::ShLIOp::create(
      b, loc, arith::AndIOp::create(b, loc, u, c32(0x80)), c32(24));
  Value exp = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, u, c32(3)), c32(0xF));
  Value man = arith::AndIOp::create(b, loc, u, c32(7));
  Value normalBits = arith::OrIOp::create(
      b, loc,
      arith::ShLIOp::create(b, loc, arith::AddIOp::create(b, loc, exp, c32(120)),
                            c32(23)),
      arith::ShLIOp::create(b, loc, man, c32(20)));
  Value subnormal = arith::MulFOp::create(
      b, loc, arith::UIToFPOp::create(b, loc, f32, man),
      floatConst(b, loc, f32, 0x1.0p-9));
  Value magnitude = arith::SelectOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, exp, c32(0)),
      arith::BitcastOp::create(b, loc, i32, subnormal), normalBits);
  Value isNan = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::eq, arith::AndIOp::create(b, loc, u, c32(0x7F)),
      c32(0x7F));
  magnitude = arith::SelectOp::create(b, loc, isNan, c32(0x7FC00000), magnitude);
  return arith::BitcastOp::create(b, loc, f32,
                                  arith::OrIOp::create(b, loc, magnitude, sign));
}

/// f32 -> f8 bits, rounding to nearest even; too large becomes inf (E5M2) or
/// NaN (E4M3FN, which has no inf), as PyTorch converts.
Value encodeFloat8(OpBuilder &b, Location loc, Value x, Type type) {
  Float8Format f = formatOf(type);
  Type i32 = b.getI32Type(), f32 = b.getF32Type();
  auto c32 = [&](int64_t v) { return intConst(b, loc, i32, v); };
  Value bits = arith::BitcastOp::create(b, loc, i32, x);
  Value sign = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, bits, c32(24)), c32(0x80));
  Value absBits = arith::AndIOp::create(b, loc, bits, c32(0x7FFFFFFF));
  Value a = arith::BitcastOp::create(b, loc, f32, absBits);
  // Normal range: round the f32 mantissa to `mantissa` bits in the integer
  // domain (a carry moves into the exponent), then rebias.
  int64_t drop = 23 - f.mantissa;
  Value lsb = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, absBits, c32(drop)), c32(1));
  Value rounded = arith::AddIOp::create(
      b, loc, absBits,
      arith::AddIOp::create(b, loc, c32((int64_t(1) << (drop - 1)) - 1), lsb));
  Value normal = arith::SubIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, rounded, c32(drop)),
      c32(int64_t(127 - f.bias) << f.mantissa));
  // Subnormal range: an integer count of the smallest subnormal.
  Value scaled = arith::MulFOp::create(
      b, loc, a, floatConst(b, loc, f32, std::ldexp(1.0, f.bias - 1 + f.mantissa)));
  Value sub = arith::FPToUIOp::create(b, loc, i32,
                                      math::RoundEvenOp::create(b, loc, scaled));
  Value isSub = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, a,
                                      floatConst(b, loc, f32, std::ldexp(1.0, 1 - f.bias)));
  Value r = arith::SelectOp::create(b, loc, isSub, sub, normal);
  // Overflow (inf included): inf for E5M2; E4M3FN's 0x7F is NaN.
  double overflowAt = f.hasInf ? 65536.0 : 480.0;
  Value overflow = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGE, a,
                                         floatConst(b, loc, f32, overflowAt));
  r = arith::SelectOp::create(b, loc, overflow, c32(f.hasInf ? 0x7C : 0x7F), r);
  Value isNan = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, x, x);
  r = arith::SelectOp::create(b, loc, isNan, c32(0x7F), r);
  return arith::TruncIOp::create(b, loc, b.getI8Type(),
                                 arith::OrIOp::create(b, loc, r, sign));
}

// The f32 *rounded to odd* of a value: the f32 next to it toward zero, its
// last bit set where inexact. Rounding that once more to a format of at most
// 22 bits (f16, bf16, f8) rounds as one rounding of the value would; through
// the nearest f32 it rounds twice (1 + 2^-8 + 2^-30 became 1 in bf16, not
// 1 + 2^-7; lavapipe's own f64 -> f16 did the same).

/// An int of more than 24 bits, without f64 (Vulkan devices may lack it):
/// its magnitude cut to its top 23 or 24 bits, the rest as a sticky bit,
/// converted exactly and scaled by the power of two cut off. The count of
/// bits comes from the exponent of the nearest f32 (one more where that
/// rounded up to a power of two: 23 bits kept, still enough). A signed
/// value is shifted as it is, never negated whole: the negation of the
/// most negative int becomes an abs that ptxas takes as non-negative
/// (converting it signed: -2^31 became 256 on the H100).
Value intToF32RoundedToOdd(OpBuilder &b, Location loc, Value v, bool isUnsigned) {
  Type it = v.getType(), i32 = b.getI32Type(), f32 = b.getF32Type();
  auto c = [&](int64_t n) { return intConst(b, loc, it, n); };
  auto c32 = [&](int64_t n) { return intConst(b, loc, i32, n); };
  Value nearest = isUnsigned ? Value(arith::UIToFPOp::create(b, loc, f32, v))
                             : Value(arith::SIToFPOp::create(b, loc, f32, v));
  Value exponent = arith::AndIOp::create(
      b, loc,
      arith::ShRUIOp::create(b, loc, arith::BitcastOp::create(b, loc, i32, nearest), c32(23)),
      c32(0xFF));
  // bits - 24 = exponent - 127 + 1 - 24; none cut from up to 24 bits.
  Value cut32 = arith::MaxSIOp::create(
      b, loc, arith::SubIOp::create(b, loc, exponent, c32(150)), c32(0));
  Value cut = it == i32 ? cut32 : Value(arith::ExtUIOp::create(b, loc, it, cut32));
  // The bits cut off (of the value as stored: a negative one's are zero
  // exactly where its magnitude's are) and the quotient rounded down.
  Value rest = arith::AndIOp::create(
      b, loc, v, arith::SubIOp::create(b, loc, arith::ShLIOp::create(b, loc, c(1), cut), c(1)));
  Value inexact = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, rest, c(0));
  Value sticky = arith::ExtUIOp::create(b, loc, it, inexact);
  Value negative;
  Value kept;
  if (isUnsigned) {
    kept = arith::ShRUIOp::create(b, loc, v, cut);
  } else {
    // The magnitude's quotient toward zero: -floor(v / 2^cut), less one
    // where inexact. Never the most negative int (cut >= 8 there).
    negative = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, v, c(0));
    Value floor = arith::ShRSIOp::create(b, loc, v, cut);
    Value up = arith::SubIOp::create(b, loc, arith::SubIOp::create(b, loc, c(0), floor), sticky);
    kept = arith::SelectOp::create(b, loc, negative, up, floor);
  }
  Value odd = arith::OrIOp::create(b, loc, kept, sticky);
  // 2^cut from its exponent bits (cut <= 40).
  Value scale = arith::BitcastOp::create(
      b, loc, f32, arith::ShLIOp::create(b, loc, arith::AddIOp::create(b, loc, cut32, c32(127)),
                                         c32(23)));
  Value r = arith::MulFOp::create(b, loc, arith::UIToFPOp::create(b, loc, f32, odd), scale);
  return isUnsigned ? r
                    : arith::SelectOp::create(b, loc, negative, arith::NegFOp::create(b, loc, r), r);
}

/// An f64: the nearest f32, moved toward zero where it was rounded away, its
/// last bit set where inexact. Not below the smallest normal f32: a target
/// that flushes f32 subnormals would turn 2^-126 (1 - 2^-30) into 0, and
/// what rounds to 2^-126 in f32 rounds to it in bf16 and f16 too.
Value f64ToF32RoundedToOdd(OpBuilder &b, Location loc, Value v) {
  Type f32 = b.getF32Type(), f64 = b.getF64Type(), i32 = b.getI32Type();
  auto cmpf = [&](arith::CmpFPredicate p, Value l, Value r) -> Value {
    return arith::CmpFOp::create(b, loc, p, l, r);
  };
  auto c = [&](int64_t n) { return intConst(b, loc, i32, n); };
  Value nearest = arith::TruncFOp::create(b, loc, f32, v);
  Value back = arith::ExtFOp::create(b, loc, f64, nearest);
  Value zero = floatConst(b, loc, f64, 0.0);
  // Rounded away from zero: |back| > |v| with v's sign.
  Value away = arith::SelectOp::create(b, loc, cmpf(arith::CmpFPredicate::OLT, v, zero),
                                       cmpf(arith::CmpFPredicate::OLT, back, v),
                                       cmpf(arith::CmpFPredicate::OGT, back, v));
  Value bits = arith::BitcastOp::create(b, loc, i32, nearest);
  Value notSmallestNormal = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::ne, arith::AndIOp::create(b, loc, bits, c(0x7FFFFFFF)),
      c(0x00800000));
  away = arith::AndIOp::create(b, loc, away, notSmallestNormal);
  // An overflow to inf moves back to the largest f32, which is odd, and
  // rounds to inf again; NaN compares unordered and stays the NaN it became.
  bits = arith::SelectOp::create(b, loc, away, arith::SubIOp::create(b, loc, bits, c(1)), bits);
  bits = arith::SelectOp::create(b, loc, cmpf(arith::CmpFPredicate::ONE, back, v),
                                 arith::OrIOp::create(b, loc, bits, c(1)), bits);
  return arith::BitcastOp::create(b, loc, f32, bits);
}

/// Whether going to `to` through f32 needs `from` rounded to odd first.
bool narrowsPastF32(Type from, Type to) {
  if (!(to.isBF16() || to.isF16() || isFloat8(to)))
    return false;
  return from.isF64() || (isa<IntegerType>(from) && from.getIntOrFloatBitWidth() > 24);
}
} // namespace

Value castScalar(OpBuilder &b, Location loc, Value v, Type from, Type to) {
  if (from == to)
    return v;
  // f8 goes through f32, which holds every f8 value exactly.
  Type f32 = b.getF32Type();
  if (isFloat8(from))
    return castScalar(b, loc, decodeFloat8(b, loc, v, from), f32, to);
  if (narrowsPastF32(from, to)) {
    Value odd = from.isF64() ? f64ToF32RoundedToOdd(b, loc, v)
                             : intToF32RoundedToOdd(b, loc, v, isUnsignedKilnType(from));
    return castScalar(b, loc, odd, f32, to);
  }
  if (isFloat8(to))
    return encodeFloat8(b, loc, castScalar(b, loc, v, from, f32), to);
  Type sTo = signlessType(to);
  bool fromFloat = isa<FloatType>(from), toFloat = isa<FloatType>(to);
  if (isBool(to)) {
    if (fromFloat)
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, v,
                                   floatConst(b, loc, from, 0.0));
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, v,
                                 intConst(b, loc, v.getType(), 0));
  }
  if (fromFloat && toFloat) {
    unsigned fw = from.getIntOrFloatBitWidth(), tw = to.getIntOrFloatBitWidth();
    if (fw == tw) // f16 <-> bf16 goes through f32
      return arith::TruncFOp::create(b, loc, to, arith::ExtFOp::create(b, loc, f32, v));
    return fw < tw ? Value(arith::ExtFOp::create(b, loc, to, v))
                   : Value(arith::TruncFOp::create(b, loc, to, v));
  }
  if (fromFloat)
    return floatToInt(b, loc, v, sTo, isUnsignedKilnType(to));
  bool srcUnsigned = isUnsignedKilnType(from) || isBool(from);
  if (toFloat)
    return srcUnsigned ? Value(arith::UIToFPOp::create(b, loc, to, v))
                       : Value(arith::SIToFPOp::create(b, loc, to, v));
  unsigned fw = from.getIntOrFloatBitWidth(), tw = to.getIntOrFloatBitWidth();
  if (fw == tw)
    return v;
  if (fw > tw)
    return arith::TruncIOp::create(b, loc, sTo, v);
  return srcUnsigned ? Value(arith::ExtUIOp::create(b, loc, sTo, v))
                     : Value(arith::ExtSIOp::create(b, loc, sTo, v));
}

Value scalarConstant(OpBuilder &b, Location loc, Type type, double value) {
  if (isFloat8(type)) {
    APFloat f(value);
    bool lost;
    f.convert(cast<FloatType>(type).getFloatSemantics(),
              APFloat::rmNearestTiesToEven, &lost);
    return arith::ConstantOp::create(
        b, loc, b.getI8Type(),
        b.getIntegerAttr(b.getI8Type(), f.bitcastToAPInt().getZExtValue()));
  }
  if (isa<FloatType>(type))
    return floatConst(b, loc, type, value);
  Value f = floatConst(b, loc, b.getF64Type(), value);
  return castScalar(b, loc, f, b.getF64Type(), type);
}

bool isElementwiseKilnOp(Operation *op) {
  return op->hasTrait<OpTrait::ElementwiseUnary>() ||
         op->hasTrait<OpTrait::BroadcastBinary>() ||
         isa<IsnanOp, CastOp, SelectOp>(op);
}

namespace {
Type elementTypeOf(Value v) {
  return cast<ShapedType>(v.getType()).getElementType();
}

Value emitFloatUnary(OpBuilder &b, Location loc, Operation *op, Value x) {
  Type t = x.getType();
  auto c = [&](double v) { return floatConst(b, loc, t, v); };
  auto sigmoid = [&](Value v) {
    Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, v));
    return arith::DivFOp::create(b, loc, c(1.0),
                                 arith::AddFOp::create(b, loc, c(1.0), e));
  };
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case([&](NegOp) { return arith::NegFOp::create(b, loc, x); })
      .Case([&](AbsOp) { return math::AbsFOp::create(b, loc, x); })
      .Case([&](ExpOp) { return math::ExpOp::create(b, loc, x); })
      .Case([&](LogOp) { return math::LogOp::create(b, loc, x); })
      .Case([&](Log1pOp) { return math::Log1pOp::create(b, loc, x); })
      .Case([&](SqrtOp) { return math::SqrtOp::create(b, loc, x); })
      .Case([&](RsqrtOp) {
        // Not math.rsqrt: libm has no rsqrt for the f64 path to call.
        return arith::DivFOp::create(b, loc, c(1.0),
                                     math::SqrtOp::create(b, loc, x));
      })
      .Case([&](RecipOp) { return arith::DivFOp::create(b, loc, c(1.0), x); })
      .Case([&](SinOp) { return math::SinOp::create(b, loc, x); })
      .Case([&](CosOp) { return math::CosOp::create(b, loc, x); })
      .Case([&](TanhOp) { return math::TanhOp::create(b, loc, x); })
      .Case([&](SigmoidOp) { return sigmoid(x); })
      .Case([&](ErfOp) { return math::ErfOp::create(b, loc, x); })
      .Case([&](ReluOp) {
        // NaN stays NaN, as in PyTorch.
        Value neg = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x,
                                          c(0.0));
        return arith::SelectOp::create(b, loc, neg, c(0.0), x);
      })
      .Case([&](SiluOp) { return arith::MulFOp::create(b, loc, x, sigmoid(x)); })
      .Case([&](FloorOp) { return math::FloorOp::create(b, loc, x); })
      .Case([&](CeilOp) { return math::CeilOp::create(b, loc, x); })
      .Case([&](RoundOp) { return math::RoundEvenOp::create(b, loc, x); })
      .Case([&](SignOp) {
        Value pos = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x,
                                          c(0.0));
        Value neg = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x,
                                          c(0.0));
        Value r = arith::SelectOp::create(b, loc, neg, c(-1.0), x);
        return arith::SelectOp::create(b, loc, pos, c(1.0), r);
      })
      .Case([&](GeluOp gelu) -> Value {
        Value half = arith::MulFOp::create(b, loc, c(0.5), x);
        Value inner;
        if (gelu.getApproximate() == "tanh") {
          Value x3 = arith::MulFOp::create(
              b, loc, x, arith::MulFOp::create(b, loc, x, x));
          Value poly = arith::AddFOp::create(
              b, loc, x, arith::MulFOp::create(b, loc, c(0.044715), x3));
          inner = math::TanhOp::create(
              b, loc,
              arith::MulFOp::create(b, loc,
                                    c(std::sqrt(2.0 / std::numbers::pi)), poly));
        } else {
          inner = math::ErfOp::create(
              b, loc, arith::MulFOp::create(b, loc, x, c(std::numbers::sqrt2 / 2)));
        }
        return arith::MulFOp::create(b, loc, half,
                                     arith::AddFOp::create(b, loc, c(1.0), inner));
      })
      .Case([&](ClampOp clamp) {
        Value r = x;
        if (clamp.getMin())
          r = arith::MaximumFOp::create(b, loc, r,
                                        c(clamp.getMin()->convertToDouble()));
        if (clamp.getMax())
          r = arith::MinimumFOp::create(b, loc, r,
                                        c(clamp.getMax()->convertToDouble()));
        return r;
      })
      .Default([](Operation *) -> Value { return nullptr; });
}

Value emitIntUnary(OpBuilder &b, Location loc, Operation *op, Value x,
                   Type kilnType) {
  Type t = x.getType();
  bool isUnsigned = isUnsignedKilnType(kilnType);
  auto c = [&](int64_t v) { return intConst(b, loc, t, v); };
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case([&](NegOp) { return arith::SubIOp::create(b, loc, c(0), x); })
      .Case([&](AbsOp) {
        Value neg =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, x, c(0));
        return arith::SelectOp::create(b, loc, neg,
                                       arith::SubIOp::create(b, loc, c(0), x), x);
      })
      .Case([&](ReluOp) { return arith::MaxSIOp::create(b, loc, x, c(0)); })
      .Case([&](SignOp) {
        Value pos = arith::ExtUIOp::create(
            b, loc, t,
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, x, c(0)));
        Value neg = arith::ExtUIOp::create(
            b, loc, t,
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, x, c(0)));
        return arith::SubIOp::create(b, loc, pos, neg);
      })
      .Case([&](NotOp) { return arith::XOrIOp::create(b, loc, x, c(-1)); })
      .Case([&](ClampOp clamp) {
        Value r = x;
        if (clamp.getMin()) {
          Value lo = scalarConstant(b, loc, kilnType,
                                    clamp.getMin()->convertToDouble());
          r = isUnsigned ? Value(arith::MaxUIOp::create(b, loc, r, lo))
                         : Value(arith::MaxSIOp::create(b, loc, r, lo));
        }
        if (clamp.getMax()) {
          Value hi = scalarConstant(b, loc, kilnType,
                                    clamp.getMax()->convertToDouble());
          r = isUnsigned ? Value(arith::MinUIOp::create(b, loc, r, hi))
                         : Value(arith::MinSIOp::create(b, loc, r, hi));
        }
        return r;
      })
      .Default([](Operation *) -> Value { return nullptr; });
}

Value emitFloatBinary(OpBuilder &b, Location loc, Operation *op, Value l,
                      Value r) {
  using P = arith::CmpFPredicate;
  auto cmp = [&](P p) { return arith::CmpFOp::create(b, loc, p, l, r); };
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case([&](AddOp) { return arith::AddFOp::create(b, loc, l, r); })
      .Case([&](SubOp) { return arith::SubFOp::create(b, loc, l, r); })
      .Case([&](MulOp) { return arith::MulFOp::create(b, loc, l, r); })
      .Case([&](DivOp) { return arith::DivFOp::create(b, loc, l, r); })
      .Case([&](RemOp) { return arith::RemFOp::create(b, loc, l, r); })
      .Case([&](PowOp) { return math::PowFOp::create(b, loc, l, r); })
      .Case([&](MaxOp) { return arith::MaximumFOp::create(b, loc, l, r); })
      .Case([&](MinOp) { return arith::MinimumFOp::create(b, loc, l, r); })
      .Case([&](EqOp) { return cmp(P::OEQ); })
      .Case([&](NeOp) { return cmp(P::UNE); })
      .Case([&](LtOp) { return cmp(P::OLT); })
      .Case([&](LeOp) { return cmp(P::OLE); })
      .Case([&](GtOp) { return cmp(P::OGT); })
      .Case([&](GeOp) { return cmp(P::OGE); })
      .Default([](Operation *) -> Value { return nullptr; });
}

// Integer division and remainder: a zero divisor gives 0 and MIN / -1 wraps,
// instead of trapping the process.
Value emitIntDivRem(OpBuilder &b, Location loc, bool isRem, bool isUnsigned,
                    Value l, Value r) {
  Type t = l.getType();
  unsigned w = t.getIntOrFloatBitWidth();
  Value zero = intConst(b, loc, t, 0), one = intConst(b, loc, t, 1);
  Value isZero = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, r, zero);
  Value safe = arith::SelectOp::create(b, loc, isZero, one, r);
  if (!isUnsigned) {
    Value minV = arith::ConstantOp::create(
        b, loc, t, b.getIntegerAttr(t, APInt::getSignedMinValue(w)));
    Value overflow = arith::AndIOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, l, minV),
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, r,
                              intConst(b, loc, t, -1)));
    safe = arith::SelectOp::create(b, loc, overflow, one, safe);
    Value q = isRem ? Value(arith::RemSIOp::create(b, loc, l, safe))
                    : Value(arith::DivSIOp::create(b, loc, l, safe));
    // MIN % -1 is 0; MIN / -1 wraps to MIN, which l / 1 already gives.
    if (isRem)
      q = arith::SelectOp::create(b, loc, overflow, zero, q);
    return arith::SelectOp::create(b, loc, isZero, zero, q);
  }
  Value q = isRem ? Value(arith::RemUIOp::create(b, loc, l, safe))
                  : Value(arith::DivUIOp::create(b, loc, l, safe));
  return arith::SelectOp::create(b, loc, isZero, zero, q);
}

// Shifts by the width or more give 0 (or the sign fill), as NumPy does.
Value emitShift(OpBuilder &b, Location loc, bool left, bool isUnsigned, Value l,
                Value r) {
  Type t = l.getType();
  unsigned w = t.getIntOrFloatBitWidth();
  Value width = intConst(b, loc, t, w);
  Value outOfRange =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, r, width);
  Value amount = arith::SelectOp::create(b, loc, outOfRange,
                                         intConst(b, loc, t, w - 1), r);
  if (left) {
    Value s = arith::ShLIOp::create(b, loc, l, amount);
    return arith::SelectOp::create(b, loc, outOfRange, intConst(b, loc, t, 0), s);
  }
  if (isUnsigned) {
    Value s = arith::ShRUIOp::create(b, loc, l, amount);
    return arith::SelectOp::create(b, loc, outOfRange, intConst(b, loc, t, 0), s);
  }
  return arith::ShRSIOp::create(b, loc, l, amount);
}

Value emitIntBinary(OpBuilder &b, Location loc, Operation *op, Value l, Value r,
                    Type kilnType) {
  bool u = isUnsignedKilnType(kilnType) || isBool(kilnType);
  using P = arith::CmpIPredicate;
  auto cmp = [&](P s, P uns) {
    return arith::CmpIOp::create(b, loc, u ? uns : s, l, r);
  };
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case([&](AddOp) { return arith::AddIOp::create(b, loc, l, r); })
      .Case([&](SubOp) { return arith::SubIOp::create(b, loc, l, r); })
      .Case([&](MulOp) { return arith::MulIOp::create(b, loc, l, r); })
      .Case([&](DivOp) { return emitIntDivRem(b, loc, false, u, l, r); })
      .Case([&](RemOp) { return emitIntDivRem(b, loc, true, u, l, r); })
      .Case([&](MaxOp) {
        return u ? Value(arith::MaxUIOp::create(b, loc, l, r))
                 : Value(arith::MaxSIOp::create(b, loc, l, r));
      })
      .Case([&](MinOp) {
        return u ? Value(arith::MinUIOp::create(b, loc, l, r))
                 : Value(arith::MinSIOp::create(b, loc, l, r));
      })
      .Case([&](AndOp) { return arith::AndIOp::create(b, loc, l, r); })
      .Case([&](OrOp) { return arith::OrIOp::create(b, loc, l, r); })
      .Case([&](XorOp) { return arith::XOrIOp::create(b, loc, l, r); })
      .Case([&](ShlOp) { return emitShift(b, loc, true, u, l, r); })
      .Case([&](ShrOp) { return emitShift(b, loc, false, u, l, r); })
      .Case([&](EqOp) { return cmp(P::eq, P::eq); })
      .Case([&](NeOp) { return cmp(P::ne, P::ne); })
      .Case([&](LtOp) { return cmp(P::slt, P::ult); })
      .Case([&](LeOp) { return cmp(P::sle, P::ule); })
      .Case([&](GtOp) { return cmp(P::sgt, P::ugt); })
      .Case([&](GeOp) { return cmp(P::sge, P::uge); })
      .Default([](Operation *) -> Value { return nullptr; });
}
} // namespace

Value emitElementwise(OpBuilder &b, Location loc, Operation *op,
                      ValueRange args) {
  if (auto cast = dyn_cast<CastOp>(op))
    return castScalar(b, loc, args[0], elementTypeOf(cast.getX()),
                      elementTypeOf(cast.getResult()));
  if (isa<SelectOp>(op))
    return arith::SelectOp::create(b, loc, args[0], args[1], args[2]);
  if (isa<IsnanOp>(op))
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, args[0],
                                 args[0]);
  Type kilnType = elementTypeOf(op->getOperand(0));
  if (!isa<FloatType>(kilnType)) {
    if (op->getNumOperands() == 1)
      return emitIntUnary(b, loc, op, args[0], kilnType);
    return emitIntBinary(b, loc, op, args[0], args[1], kilnType);
  }
  // Float ops run in f32 for f16/bf16 and round once at the end.
  SmallVector<Value> wide;
  for (Value a : args)
    wide.push_back(toComputeFloat(b, loc, a));
  Value r = op->getNumOperands() == 1
                ? emitFloatUnary(b, loc, op, wide[0])
                : emitFloatBinary(b, loc, op, wide[0], wide[1]);
  if (!r || !isa<FloatType>(r.getType()))
    return r;
  return fromComputeFloat(b, loc, r, kilnType);
}

std::array<Value, 4> emitPhilox(OpBuilder &b, Location loc, Value index64,
                                Value seed64) {
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  auto c32 = [&](uint32_t v) {
    return arith::ConstantOp::create(b, loc, i32,
                                     b.getIntegerAttr(i32, APInt(32, v)));
  };
  auto lo = [&](Value v) { return arith::TruncIOp::create(b, loc, i32, v); };
  auto hi = [&](Value v) {
    return arith::TruncIOp::create(
        b, loc, i32,
        arith::ShRUIOp::create(b, loc, v, intConst(b, loc, i64, 32)));
  };
  Value c0 = lo(index64), c1 = hi(index64), c2 = c32(0), c3 = c32(0);
  Value k0 = lo(seed64), k1 = hi(seed64);
  Value m0 = c32(0xD2511F53), m1 = c32(0xCD9E8D57);
  Value w0 = c32(0x9E3779B9), w1 = c32(0xBB67AE85);
  for (int round = 0; round < 10; ++round) {
    auto p0 = arith::MulUIExtendedOp::create(b, loc, m0, c0);
    auto p1 = arith::MulUIExtendedOp::create(b, loc, m1, c2);
    Value n0 = arith::XOrIOp::create(
        b, loc, arith::XOrIOp::create(b, loc, p1.getHigh(), c1), k0);
    Value n1 = p1.getLow();
    Value n2 = arith::XOrIOp::create(
        b, loc, arith::XOrIOp::create(b, loc, p0.getHigh(), c3), k1);
    Value n3 = p0.getLow();
    c0 = n0, c1 = n1, c2 = n2, c3 = n3;
    k0 = arith::AddIOp::create(b, loc, k0, w0);
    k1 = arith::AddIOp::create(b, loc, k1, w1);
  }
  return {c0, c1, c2, c3};
}

} // namespace kiln
