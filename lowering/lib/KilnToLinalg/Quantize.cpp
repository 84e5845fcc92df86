//===- Quantize.cpp - kiln.quantize / kiln.dequantize -> linalg ----------===//
//
// Both are elementwise with a broadcast scale. Per-block scales broadcast
// after splitting the last dim into (blocks, block_size).
//
//===----------------------------------------------------------------------===//
#include "Patterns.h"
#include "kiln/Dialect/KilnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;

namespace kiln::to_linalg {
namespace {

Value toF32(OpBuilder &b, Location loc, Value v) {
  return v.getType().isF32() ? v : arith::ExtFOp::create(b, loc, b.getF32Type(), v);
}

/// Runs `body(value, scale)` over `values`, the scale broadcast per tensor
/// or per block of the last dim.
Value withScale(OpBuilder &b, Location loc, Value values, Value scale,
                std::optional<uint64_t> blockSize, Type resultElement,
                const BodyFn &body) {
  ArrayRef<int64_t> shape = cast<RankedTensorType>(values.getType()).getShape();
  if (!blockSize)
    return buildElementwise(b, loc, shape, resultElement, {values, scale}, body);
  SmallVector<int64_t> split(shape);
  int64_t block = static_cast<int64_t>(*blockSize);
  split.back() /= block;
  split.push_back(block);
  SmallVector<int64_t> scaleShape(split);
  scaleShape.back() = 1;
  Value result = buildElementwise(b, loc, split, resultElement,
                                  {reshapeTo(b, loc, values, split),
                                   reshapeTo(b, loc, scale, scaleShape)},
                                  body);
  return reshapeTo(b, loc, result, shape);
}

struct QuantizeToLinalg : OpConversionPattern<QuantizeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(QuantizeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value result = withScale(
        rewriter, op.getLoc(), adaptor.getX(), adaptor.getScale(), op.getBlockSize(),
        rewriter.getI8Type(), [](OpBuilder &b, Location loc, ValueRange args) {
          auto c = [&](float v) {
            return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
          };
          Value q = arith::DivFOp::create(b, loc, toF32(b, loc, args[0]),
                                          toF32(b, loc, args[1]));
          Value r = math::RoundEvenOp::create(b, loc, q);
          r = arith::MinimumFOp::create(
              b, loc, arith::MaximumFOp::create(b, loc, r, c(-127)), c(127));
          Value nan = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, r, r);
          r = arith::SelectOp::create(b, loc, nan, c(0), r);
          return arith::FPToSIOp::create(b, loc, b.getI8Type(), r).getResult();
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct DequantizeToLinalg : OpConversionPattern<DequantizeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(DequantizeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type out = op.getType().getElementType();
    Value result = withScale(
        rewriter, op.getLoc(), adaptor.getQ(), adaptor.getScale(), op.getBlockSize(),
        out, [out](OpBuilder &b, Location loc, ValueRange args) -> Value {
          Value q = arith::SIToFPOp::create(b, loc, b.getF32Type(), args[0]);
          Value x = arith::MulFOp::create(b, loc, q, toF32(b, loc, args[1]));
          return out.isF32() ? x : arith::TruncFOp::create(b, loc, out, x).getResult();
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void populateQuantizePatterns(TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<QuantizeToLinalg, DequantizeToLinalg>(converter, patterns.getContext());
}

} // namespace kiln::to_linalg
