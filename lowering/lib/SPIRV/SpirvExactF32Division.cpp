//===- SpirvExactF32Division.cpp - the kiln-spirv-exact-f32-division pass ------------===//
//
// f32 a / b rounded to nearest even from integer operations, which every
// device evaluates exactly: the significands A and B (normalised to 24 bits,
// subnormals included) give Q = (A << 40) / B with remainder R, so that
// a / b = (Q + R / B) * 2^(pa - pb - 40); Q is rounded once at the bit the
// result keeps (24 bits, fewer for a subnormal result) with R != 0 as the
// sticky bit. Vulkan's own OpFDiv may be 2.5 ulp off. A statistic's
// division (`afn`: a sum by its count, a reciprocal of a row's sum or
// deviation; docs/precision.md) keeps OpFDiv: once per row, the routine's
// 64-bit division cost a row kernel registers in every thread.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/SPIRV/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Arith/IR/Arith.h"

namespace kiln {
#define GEN_PASS_DEF_KILNSPIRVEXACTF32DIVISION
#include "kiln/Lowering/SPIRV/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
/// Builds integer arithmetic lane-wise over the shape of an f32 scalar or
/// vector.
struct Lanes {
  OpBuilder &b;
  Location loc;
  Type shape;

  Type of(unsigned width) const {
    Type elem = b.getIntegerType(width);
    if (auto v = dyn_cast<VectorType>(shape))
      return v.clone(elem);
    return elem;
  }
  Value constant(unsigned width, int64_t v) {
    Type t = of(width);
    TypedAttr attr = b.getIntegerAttr(getElementTypeOrSelf(t), v);
    if (auto vt = dyn_cast<VectorType>(t))
      attr = DenseElementsAttr::get(vt, Attribute(attr));
    return arith::ConstantOp::create(b, loc, t, attr);
  }
  Value c32(int64_t v) { return constant(32, v); }
  Value c64(int64_t v) { return constant(64, v); }
  Value eq(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, x, y);
  }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
  Value bitAnd(Value x, Value y) { return arith::AndIOp::create(b, loc, x, y); }
  Value bitOr(Value x, Value y) { return arith::OrIOp::create(b, loc, x, y); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value shl(Value x, Value y) { return arith::ShLIOp::create(b, loc, x, y); }
  Value shr(Value x, Value y) { return arith::ShRUIOp::create(b, loc, x, y); }
};

/// An f32 operand split into a 24-bit significand A in [2^23, 2^24) and an
/// exponent p with |x| = A * 2^p, plus its class.
struct Unpacked {
  Value significand, exponent, isZero, isInf, isNan;
};

Unpacked unpack(Lanes &l, Value bits) {
  Value field = l.bitAnd(l.shr(bits, l.c32(23)), l.c32(0xff));
  Value fraction = l.bitAnd(bits, l.c32(0x7fffff));
  Value subnormal = l.eq(field, l.c32(0));
  // A subnormal's leading one moves up to bit 23: its position is the
  // exponent of the fraction converted (exactly) to a float.
  Value asFloat = arith::UIToFPOp::create(l.b, l.loc, l.shape, fraction);
  Value position = l.bitAnd(
      l.shr(arith::BitcastOp::create(l.b, l.loc, l.of(32), asFloat), l.c32(23)),
      l.c32(0xff));
  // 150 - position, at most 24 (a zero fraction: no leading one).
  Value shift = arith::MinUIOp::create(l.b, l.loc, l.sub(l.c32(150), position),
                                       l.c32(24));
  Unpacked u;
  u.significand = l.select(subnormal, l.shl(fraction, shift),
                           l.bitOr(fraction, l.c32(0x800000)));
  u.exponent = l.select(subnormal, l.sub(l.c32(-149), shift),
                        l.sub(field, l.c32(150)));
  Value fractionZero = l.eq(fraction, l.c32(0));
  Value maxField = l.eq(field, l.c32(0xff));
  u.isZero = l.bitAnd(subnormal, fractionZero);
  u.isInf = l.bitAnd(maxField, fractionZero);
  u.isNan = l.bitAnd(maxField, l.eq(fractionZero, l.constant(1, 0)));
  return u;
}

Value exactDivide(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  Lanes l{b, loc, lhs.getType()};
  Type i32 = l.of(32), i64 = l.of(64);
  Value ua = arith::BitcastOp::create(b, loc, i32, lhs);
  Value ub = arith::BitcastOp::create(b, loc, i32, rhs);
  Value sign = l.bitAnd(arith::XOrIOp::create(b, loc, ua, ub),
                        l.c32(int32_t(0x80000000)));
  Unpacked a = unpack(l, ua), d = unpack(l, ub);

  // Q and R; a zero divisor (a special case below) divides by 2^23 instead.
  Value divisor = arith::ExtUIOp::create(
      b, loc, i64, l.select(d.isZero, l.c32(0x800000), d.significand));
  Value numerator =
      l.shl(arith::ExtUIOp::create(b, loc, i64, a.significand), l.c64(40));
  Value q = arith::DivUIOp::create(b, loc, numerator, divisor);
  Value inexact = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::ne,
      arith::RemUIOp::create(b, loc, numerator, divisor), l.c64(0));

  // Q's leading bit is 39 or 40; its last bit weighs 2^base. Keep 24 bits,
  // or fewer where the result is subnormal (last kept bit 2^-149).
  Value top = l.select(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge,
                                             q, l.c64(int64_t(1) << 40)),
                       l.c32(40), l.c32(39));
  Value base = l.sub(l.sub(a.exponent, d.exponent), l.c32(40));
  Value drop = arith::MaxSIOp::create(b, loc, l.sub(top, l.c32(23)),
                                      l.sub(l.c32(-149), base));
  // Dropping 42 or more bits leaves zero; 63 keeps the shifts defined.
  drop = arith::MinSIOp::create(b, loc, drop, l.c32(63));
  Value drop64 = arith::ExtUIOp::create(b, loc, i64, drop);
  Value kept = l.shr(q, drop64);
  Value rest = l.sub(q, l.shl(kept, drop64));
  Value half = l.shl(l.c64(1), l.sub(drop64, l.c64(1)));
  Value above = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, rest, half);
  Value tie = l.eq(rest, half);
  Value odd = l.eq(l.bitAnd(kept, l.c64(1)), l.c64(1));
  Value up = l.bitOr(above, l.bitAnd(tie, l.bitOr(inexact, odd)));
  kept = l.add(kept, arith::ExtUIOp::create(b, loc, i64, up));
  // kept * 2^(base + drop), encoded: the exponent field plus the significand
  // (whose leading one, or a carry out of it, adds to the field); a result
  // past the largest float becomes infinity.
  Value field = arith::ExtSIOp::create(
      b, loc, i64, l.add(l.add(base, drop), l.c32(149)));
  Value magnitude = arith::MinUIOp::create(
      b, loc, l.add(l.shl(field, l.c64(23)), kept), l.c64(0x7f800000));
  magnitude = l.select(l.eq(kept, l.c64(0)), l.c64(0), magnitude);
  Value result = arith::TruncIOp::create(b, loc, i32, magnitude);

  Value nan = l.bitOr(l.bitOr(a.isNan, d.isNan),
                      l.bitOr(l.bitAnd(a.isInf, d.isInf),
                              l.bitAnd(a.isZero, d.isZero)));
  result = l.select(l.bitOr(a.isInf, d.isZero), l.c32(0x7f800000), result);
  result = l.select(l.bitOr(a.isZero, d.isInf), l.c32(0), result);
  result = l.bitOr(result, sign);
  result = l.select(nan, l.c32(0x7fc00000), result);
  return arith::BitcastOp::create(b, loc, lhs.getType(), result);
}

struct KilnSpirvExactF32DivisionPass
    : kiln::impl::KilnSpirvExactF32DivisionBase<KilnSpirvExactF32DivisionPass> {
  void runOnOperation() override {
    SmallVector<arith::DivFOp> divisions;
    getOperation().walk([&](arith::DivFOp op) {
      bool statistic = arith::bitEnumContainsAll(op.getFastmath(), arith::FastMathFlags::afn);
      if (getElementTypeOrSelf(op.getType()).isF32() && !statistic)
        divisions.push_back(op);
    });
    for (arith::DivFOp op : divisions) {
      OpBuilder b(op);
      op.replaceAllUsesWith(exactDivide(b, op.getLoc(), op.getLhs(), op.getRhs()));
      op.erase();
    }
  }
};
} // namespace
