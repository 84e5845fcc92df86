//===- SpirvExpandF64Math.cpp - the kiln-spirv-expand-f64-math pass ------===//
//
// f64 transcendental functions from f64 arithmetic and bit operations, for
// targets without them (SPIR-V's GLSL.std.450 stops at 32 bits), and f64
// round-half-even, which a driver got wrong. Works on
// scalars and vectors alike: every constant is splat to the operand type.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/SPIRV/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>
#include <numbers>

namespace kiln {
#define GEN_PASS_DEF_KILNSPIRVEXPANDF64MATH
#include "kiln/Lowering/SPIRV/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// Builds f64 (or vector of f64) arithmetic at one insertion point.
class F64Builder {
public:
  F64Builder(OpBuilder &b, Location loc, Type type)
      : b(b), loc(loc), type(type), intType(withElement(b.getI64Type())),
        boolType(withElement(b.getI1Type())) {}

  Value c(double v) { return constant(b.getF64FloatAttr(v), type); }
  Value ci(int64_t v) { return constant(b.getI64IntegerAttr(v), intType); }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
  Value neg(Value x) { return arith::NegFOp::create(b, loc, x); }
  Value fma(Value x, Value y, Value z) { return math::FmaOp::create(b, loc, x, y, z); }
  Value abs(Value x) { return math::AbsFOp::create(b, loc, x); }
  Value floor(Value x) { return math::FloorOp::create(b, loc, x); }
  /// Round half to even from IEEE additions: |x| + 2^52 - 2^52 is |x|
  /// rounded to an integer for |x| < 2^52 (larger ones are integers, NaN
  /// and inf pass), the sign put back from x's bits (-0.4 -> -0). Not the
  /// driver's RoundEven: lavapipe on AMD hosts rounds f64 halves toward zero.
  Value roundEven(Value x) {
    Value big = c(4503599627370496.0);
    Value a = abs(x);
    Value rounded = sub(add(a, big), big);
    Value sign = iand(bits(x), ci(std::numeric_limits<int64_t>::min()));
    return select(lt(a, big), fromBits(ior(bits(rounded), sign)), x);
  }
  Value cmp(arith::CmpFPredicate p, Value x, Value y) {
    return arith::CmpFOp::create(b, loc, p, x, y);
  }
  Value lt(Value x, Value y) { return cmp(arith::CmpFPredicate::OLT, x, y); }
  Value gt(Value x, Value y) { return cmp(arith::CmpFPredicate::OGT, x, y); }
  Value eq(Value x, Value y) { return cmp(arith::CmpFPredicate::OEQ, x, y); }
  Value isNan(Value x) { return cmp(arith::CmpFPredicate::UNO, x, x); }
  Value select(Value cond, Value x, Value y) {
    return arith::SelectOp::create(b, loc, cond, x, y);
  }
  Value bits(Value x) { return arith::BitcastOp::create(b, loc, intType, x); }
  Value fromBits(Value i) { return arith::BitcastOp::create(b, loc, type, i); }
  Value toInt(Value x) { return arith::FPToSIOp::create(b, loc, intType, x); }
  Value toFloat(Value i) { return arith::SIToFPOp::create(b, loc, type, i); }
  Value iadd(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value isub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value iand(Value x, Value y) { return arith::AndIOp::create(b, loc, x, y); }
  Value ior(Value x, Value y) { return arith::OrIOp::create(b, loc, x, y); }
  Value shl(Value x, int64_t n) { return arith::ShLIOp::create(b, loc, x, ci(n)); }
  Value shr(Value x, int64_t n) { return arith::ShRSIOp::create(b, loc, x, ci(n)); }
  Value ieq(Value x, int64_t v) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, x, ci(v));
  }
  Value both(Value x, Value y) { return arith::AndIOp::create(b, loc, x, y); }
  Value notOf(Value x) {
    return arith::XOrIOp::create(b, loc, x, constant(b.getBoolAttr(true), boolType));
  }

  /// c[0] + x * (c[1] + x * (...)).
  Value polynomial(Value x, ArrayRef<double> coefficients) {
    Value acc = c(coefficients.back());
    for (double k : llvm::reverse(coefficients.drop_back()))
      acc = fma(acc, x, c(k));
    return acc;
  }

  /// 2^k for integer-valued k in [-1077, 1025], as two normal factors.
  Value scaleByPowerOfTwo(Value x, Value k) {
    Value ki = toInt(k);
    Value k1 = shr(ki, 1);
    Value k2 = isub(ki, k1);
    Value s1 = fromBits(shl(iadd(k1, ci(1023)), 52));
    Value s2 = fromBits(shl(iadd(k2, ci(1023)), 52));
    return mul(mul(x, s1), s2);
  }

  Value exp(Value x) {
    const double inf = std::numeric_limits<double>::infinity();
    Value clamped = arith::MinimumFOp::create(
        b, loc, arith::MaximumFOp::create(b, loc, x, c(-746.0)), c(710.0));
    Value k = roundEven(mul(clamped, c(std::numbers::log2e)));
    Value r = fma(neg(k), c(6.93147180369123816490e-01), clamped);
    r = fma(neg(k), c(1.90821492927058770002e-10), r);
    SmallVector<double> taylor;
    double factorial = 1;
    for (int i = 0; i <= 13; ++i) {
      factorial *= i ? i : 1;
      taylor.push_back(1.0 / factorial);
    }
    Value result = scaleByPowerOfTwo(polynomial(r, taylor), k);
    result = select(gt(x, c(709.782712893384)), c(inf), result);
    result = select(lt(x, c(-745.2)), c(0.0), result);
    return select(isNan(x), x, result);
  }

  /// exp(y) - 1 for y >= 0, accurate near 0.
  Value expm1NonNegative(Value y) {
    SmallVector<double> taylor = {0.0};
    double factorial = 1;
    for (int i = 1; i <= 16; ++i) {
      factorial *= i;
      taylor.push_back(1.0 / factorial);
    }
    return select(lt(y, c(0.5)), polynomial(y, taylor), sub(exp(y), c(1.0)));
  }

  Value log(Value x) {
    const double inf = std::numeric_limits<double>::infinity();
    Value subnormal = lt(abs(x), c(2.2250738585072014e-308));
    Value scaled = select(subnormal, mul(x, c(18014398509481984.0)), x); // 2^54
    Value i = bits(scaled);
    Value e = isub(iand(shr(i, 52), ci(0x7ff)), ci(1023));
    e = select(subnormal, isub(e, ci(54)), e);
    Value m = fromBits(ior(iand(i, ci(0x000fffffffffffffLL)), ci(0x3ff0000000000000LL)));
    Value big = gt(m, c(std::numbers::sqrt2));
    m = select(big, mul(m, c(0.5)), m);
    e = select(big, iadd(e, ci(1)), e);
    Value f = sub(m, c(1.0));
    Value s = div(f, add(c(2.0), f));
    SmallVector<double> atanh;
    for (int k = 0; k <= 11; ++k)
      atanh.push_back(2.0 / (2 * k + 1));
    Value series = mul(s, polynomial(mul(s, s), atanh));
    Value ef = toFloat(e);
    Value result = fma(ef, c(6.93147180369123816490e-01),
                       fma(ef, c(1.90821492927058770002e-10), series));
    result = select(eq(x, c(inf)), x, result);
    result = select(eq(x, c(0.0)), c(-inf), result);
    result = select(lt(x, c(0.0)), c(std::nan("")), result);
    return select(isNan(x), x, result);
  }

  Value log1p(Value x) {
    Value u = add(c(1.0), x);
    Value d = sub(u, c(1.0));
    Value result = mul(log(u), div(x, d));
    result = select(eq(d, c(0.0)), x, result);
    return select(eq(x, c(std::numeric_limits<double>::infinity())), x, result);
  }

  /// sin (wantCos false) or cos of x by pi/2 reduction (three-part pi/2).
  Value sinCos(Value x, bool wantCos) {
    Value k = roundEven(mul(x, c(2.0 / std::numbers::pi)));
    Value r = fma(neg(k), c(1.57079632673412561417e+00), x);
    r = fma(neg(k), c(6.07710050630396597660e-11), r);
    r = fma(neg(k), c(2.02226624871116645580e-21), r);
    Value z = mul(r, r);
    SmallVector<double> sinTerms, cosTerms;
    double factorial = 1;
    for (int n = 1; n <= 19; ++n) {
      factorial *= n;
      double term = ((n / 2) % 2 ? -1.0 : 1.0) / factorial;
      (n % 2 ? sinTerms : cosTerms).push_back(term);
    }
    Value sinR = mul(r, polynomial(z, sinTerms));
    Value cosR = fma(z, polynomial(z, ArrayRef(cosTerms)), c(1.0));
    // cosTerms start at -1/2!: cos r = 1 + z * (-1/2 + z/24 - ...).
    Value quadrant = iand(toInt(k), ci(3));
    if (wantCos)
      quadrant = iand(iadd(quadrant, ci(1)), ci(3));
    Value result = select(ieq(quadrant, 0), sinR, neg(cosR));
    result = select(ieq(quadrant, 1), cosR, result);
    return select(ieq(quadrant, 2), neg(sinR), result);
  }

  Value tanh(Value x) {
    Value ax = abs(x);
    Value t = expm1NonNegative(mul(c(2.0), ax));
    Value result = div(t, add(t, c(2.0)));
    result = select(gt(ax, c(22.0)), c(1.0), result);
    result = select(lt(x, c(0.0)), neg(result), result);
    return select(isNan(x), x, result);
  }

  /// erf(x) by the rational approximations of fdlibm's s_erf.c (Sun
  /// Microsystems, 1993; their coefficients), below 1 ulp, with no loop: a
  /// 100-term series took 100 loop iterations per element, and lavapipe
  /// ends an invocation's loops after 65535 iterations in all, silently.
  /// Every range is computed and the right one selected.
  Value erf(Value x) {
    auto poly = [&](Value t, ArrayRef<double> k) {
      Value r = c(k.back());
      for (double coefficient : llvm::reverse(k.drop_back()))
        r = fma(r, t, c(coefficient));
      return r;
    };
    Value ax = abs(x);
    // |x| < 0.84375: x + x P(x^2) / Q(x^2).
    Value x2 = mul(x, x);
    Value small = add(x, mul(x, div(poly(x2, {1.28379167095512558561e-01, -3.25042107247001499370e-01,
                                              -2.84817495755985104766e-02, -5.77027029648944159157e-03,
                                              -2.37630166566501626084e-05}),
                                    poly(x2, {1.0, 3.97917223959155352819e-01, 6.50222499887672944485e-02,
                                              5.08130628187576562776e-03, 1.32494738004321644526e-04,
                                              -3.96022827877536812320e-06}))));
    // |x| < 1.25: erx + P(s) / Q(s), s = |x| - 1.
    Value s = sub(ax, c(1.0));
    Value near1 = add(c(8.45062911510467529297e-01),
                      div(poly(s, {-2.36211856075265944077e-03, 4.14856118683748331666e-01,
                                   -3.72207876035701323847e-01, 3.18346619901161753674e-01,
                                   -1.10894694282396677476e-01, 3.54783043256182359371e-02,
                                   -2.16637559486879084300e-03}),
                          poly(s, {1.0, 1.06420880400844228286e-01, 5.40397917702171048937e-01,
                                   7.18286544141962662868e-02, 1.26171219808761642112e-01,
                                   1.36370839120290507362e-02, 1.19844998467991074170e-02})));
    // |x| < 6: 1 - e^{-z^2 - 0.5625} e^{(z - |x|)(z + |x|) + R(t)/S(t)} / |x|,
    // t = 1/x^2, z = |x| with the low 32 bits cleared (z^2 exact), R/S of
    // one of two ranges split at 1/0.35.
    Value t = div(c(1.0), mul(ax, ax));
    Value low = div(poly(t, {-9.86494403484714822705e-03, -6.93858572707181764372e-01,
                             -1.05586262253232909814e+01, -6.23753324503260060396e+01,
                             -1.62396669462573470355e+02, -1.84605092906711035994e+02,
                             -8.12874355063065934246e+01, -9.81432934416914548592e+00}),
                    poly(t, {1.0, 1.96512716674392571292e+01, 1.37657754143519042600e+02,
                             4.34565877475229228821e+02, 6.45387271733267880336e+02,
                             4.29008140027567833386e+02, 1.08635005541779435134e+02,
                             6.57024977031928170135e+00, -6.04244152148580987438e-02}));
    Value high = div(poly(t, {-9.86494292470009928597e-03, -7.99283237680523006574e-01,
                              -1.77579549177547519889e+01, -1.60636384855821916062e+02,
                              -6.37566443368389627722e+02, -1.02509513161107724954e+03,
                              -4.83519191608651397019e+02}),
                     poly(t, {1.0, 3.03380607434824582924e+01, 3.25792512996573918826e+02,
                              1.53672958608443695994e+03, 3.19985821950859553908e+03,
                              2.55305040643316442583e+03, 4.74528541206955367215e+02,
                              -2.24409524465858183362e+01}));
    Value rs = select(lt(ax, c(1.0 / 0.35)), low, high);
    Value z = fromBits(iand(bits(ax), ci(static_cast<int64_t>(0xFFFFFFFF00000000ull))));
    Value tail = sub(c(1.0), div(mul(exp(sub(neg(mul(z, z)), c(0.5625))),
                                     exp(add(mul(sub(z, ax), add(z, ax)), rs))),
                                 ax));
    Value positive = select(lt(ax, c(1.25)), near1, select(lt(ax, c(6.0)), tail, c(1.0)));
    Value result = select(lt(ax, c(0.84375)), small,
                          select(lt(x, c(0.0)), neg(positive), positive));
    return select(isNan(x), x, result);
  }

  /// x^y with C's special cases: negative bases need integer exponents.
  Value pow(Value x, Value y) {
    Value magnitude = exp(mul(y, log(abs(x))));
    Value integral = eq(floor(y), y);
    Value half = mul(y, c(0.5));
    Value odd = both(integral, notOf(eq(floor(half), half)));
    Value negativeBase = lt(x, c(0.0));
    Value signed_ = select(odd, neg(magnitude), magnitude);
    Value result = select(negativeBase, select(integral, signed_, c(std::nan(""))),
                          magnitude);
    result = select(eq(x, c(1.0)), c(1.0), result);
    return select(eq(y, c(0.0)), c(1.0), result);
  }

private:
  Type withElement(Type element) {
    if (auto vector = dyn_cast<VectorType>(type))
      return VectorType::get(vector.getShape(), element);
    return element;
  }
  Value constant(TypedAttr scalar, Type t) {
    if (auto vector = dyn_cast<VectorType>(t))
      return arith::ConstantOp::create(b, loc, t,
                                       DenseElementsAttr::get(vector, scalar));
    return arith::ConstantOp::create(b, loc, t, scalar);
  }

  OpBuilder &b;
  Location loc;
  Type type, intType, boolType;
};

struct KilnSpirvExpandF64MathPass
    : kiln::impl::KilnSpirvExpandF64MathBase<KilnSpirvExpandF64MathPass> {
  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (isa<math::ExpOp, math::LogOp, math::Log1pOp, math::SinOp, math::CosOp,
              math::TanhOp, math::ErfOp, math::PowFOp, math::RoundEvenOp>(op) &&
          getElementTypeOrSelf(op->getResult(0).getType()).isF64())
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      OpBuilder b(op);
      F64Builder f(b, op->getLoc(), op->getResult(0).getType());
      Value x = op->getOperand(0);
      Value result =
          llvm::TypeSwitch<Operation *, Value>(op)
              .Case([&](math::ExpOp) { return f.exp(x); })
              .Case([&](math::LogOp) { return f.log(x); })
              .Case([&](math::Log1pOp) { return f.log1p(x); })
              .Case([&](math::SinOp) { return f.sinCos(x, false); })
              .Case([&](math::CosOp) { return f.sinCos(x, true); })
              .Case([&](math::TanhOp) { return f.tanh(x); })
              .Case([&](math::ErfOp) { return f.erf(x); })
              .Case([&](math::PowFOp) { return f.pow(x, op->getOperand(1)); })
              .Case([&](math::RoundEvenOp) { return f.roundEven(x); });
      op->getResult(0).replaceAllUsesWith(result);
      op->erase();
    }
  }
};

} // namespace
