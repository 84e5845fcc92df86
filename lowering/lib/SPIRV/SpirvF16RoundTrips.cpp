//===- SpirvF16RoundTrips.cpp - the kiln-spirv-f16-round-trips pass -------===//
//
// An f32 rounded to f16 and widened again, in integer operations that no
// driver folds away (the Passes.td description says why).
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/SPIRV/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/PatternMatch.h"

namespace kiln {
#define GEN_PASS_DEF_KILNSPIRVF16ROUNDTRIPS
#include "kiln/Lowering/SPIRV/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// The f32 `x` (scalar or vector) rounded to the nearest f16, to nearest
/// even, as an f32.
Value roundToF16(OpBuilder &b, Location loc, Value x) {
  Type f32 = x.getType();
  auto shapeOf = [&](Type element) -> Type {
    auto vector = dyn_cast<VectorType>(f32);
    return vector ? Type(vector.clone(element)) : element;
  };
  Type i32 = shapeOf(b.getI32Type());
  // An i32 constant of x's shape.
  auto k = [&](int64_t v) -> Value {
    IntegerAttr attr = b.getI32IntegerAttr(static_cast<int32_t>(v));
    if (auto vector = dyn_cast<VectorType>(i32))
      return arith::ConstantOp::create(b, loc, i32, SplatElementsAttr::get(vector, attr));
    return arith::ConstantOp::create(b, loc, attr);
  };
  auto andI = [&](Value l, Value r) { return arith::AndIOp::create(b, loc, l, r).getResult(); };
  auto add = [&](Value l, Value r) { return arith::AddIOp::create(b, loc, l, r).getResult(); };
  auto shr = [&](Value l, Value r) { return arith::ShRUIOp::create(b, loc, l, r).getResult(); };
  auto cmp = [&](arith::CmpIPredicate p, Value l, Value r) {
    return arith::CmpIOp::create(b, loc, p, l, r).getResult();
  };
  auto select = [&](Value cond, Value l, Value r) {
    return arith::SelectOp::create(b, loc, cond, l, r).getResult();
  };
  using P = arith::CmpIPredicate;
  Value bits = arith::BitcastOp::create(b, loc, i32, x);
  Value sign = andI(bits, k(0x80000000));
  Value magnitude = andI(bits, k(0x7FFFFFFF));
  // Normal f16 range (2^-14 and up): 13 bits dropped, to nearest even; past
  // the largest f16 (65504), infinity.
  Value lsb = andI(shr(magnitude, k(13)), k(1));
  Value normal = andI(add(add(magnitude, k(0x0FFF)), lsb), k(0xFFFFE000));
  normal = select(cmp(P::ugt, normal, k(0x477FE000)), k(0x7F800000), normal);
  // Below 2^-14: multiples of 2^-24, the significand (with its implicit
  // bit) shifted right by 126 - exponent (at most 25: all of it below the
  // half), to nearest even, scaled back exactly.
  Value exponent = shr(magnitude, k(23));
  Value significand = arith::OrIOp::create(b, loc, andI(magnitude, k(0x7FFFFF)), k(0x800000));
  // (At least 1: a magnitude of 2^-14 and up, whose shift would be 0 or
  // less, takes the normal branch.)
  Value shift = arith::MaxSIOp::create(
      b, loc,
      arith::MinSIOp::create(b, loc, arith::SubIOp::create(b, loc, k(126), exponent), k(25)),
      k(1));
  Value quotient = shr(significand, shift);
  Value rest = andI(significand, arith::SubIOp::create(
                                     b, loc, arith::ShLIOp::create(b, loc, k(1), shift), k(1)));
  Value half = arith::ShLIOp::create(b, loc, k(1), arith::SubIOp::create(b, loc, shift, k(1)));
  Value up = arith::OrIOp::create(
      b, loc, cmp(P::ugt, rest, half),
      andI(cmp(P::eq, rest, half), cmp(P::ne, andI(quotient, k(1)), k(0))));
  quotient = add(quotient, arith::ExtUIOp::create(b, loc, i32, up));
  Value small = arith::MulFOp::create(
      b, loc, arith::UIToFPOp::create(b, loc, f32, quotient),
      arith::BitcastOp::create(b, loc, f32, k((127 - 24) << 23)));
  Value rounded = select(cmp(P::ult, magnitude, k(0x38800000)),
                         arith::BitcastOp::create(b, loc, i32, small), normal);
  // NaN and infinities as they are.
  rounded = select(cmp(P::uge, magnitude, k(0x7F800000)), magnitude, rounded);
  return arith::BitcastOp::create(b, loc, f32, arith::OrIOp::create(b, loc, rounded, sign));
}

struct SpirvF16RoundTrips : kiln::impl::KilnSpirvF16RoundTripsBase<SpirvF16RoundTrips> {
  void runOnOperation() override {
    SmallVector<arith::ExtFOp> widenings;
    getOperation().walk([&](arith::ExtFOp op) {
      auto narrowing = op.getIn().getDefiningOp<arith::TruncFOp>();
      if (narrowing && !narrowing.getRoundingmodeAttr() &&
          getElementTypeOrSelf(narrowing.getType()).isF16() &&
          getElementTypeOrSelf(narrowing.getIn().getType()).isF32())
        widenings.push_back(op);
    });
    for (arith::ExtFOp op : widenings) {
      auto narrowing = op.getIn().getDefiningOp<arith::TruncFOp>();
      OpBuilder b(op);
      Value rounded = roundToF16(b, op.getLoc(), narrowing.getIn());
      Value result = getElementTypeOrSelf(op.getType()).isF32()
                         ? rounded
                         : arith::ExtFOp::create(b, op.getLoc(), op.getType(), rounded).getResult();
      op.replaceAllUsesWith(result);
      op.erase();
      if (narrowing->use_empty())
        narrowing.erase();
    }
  }
};

} // namespace
