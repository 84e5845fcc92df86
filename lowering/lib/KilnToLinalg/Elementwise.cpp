//===- Elementwise.cpp - kiln elementwise ops and generators -> linalg ---===//
#include "Patterns.h"
#include "kiln/Dialect/KilnOps.h"
#include "kiln/Lowering/ScalarOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

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
    Value empty = emptyTensor(rewriter, loc, type.getShape(),
                              type.getElementType());
    rewriter.replaceOp(op, linalg::FillOp::create(rewriter, loc, value, empty));
    return success();
  }
};

/// The linear (row-major) index of the current element of a generic.
Value linearIndex(OpBuilder &b, Location loc, ArrayRef<int64_t> shape) {
  Value linear = arith::ConstantIndexOp::create(b, loc, 0);
  for (auto [d, size] : llvm::enumerate(shape)) {
    Value idx = linalg::IndexOp::create(b, loc, d);
    linear = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc, linear,
                              arith::ConstantIndexOp::create(b, loc, size)),
        idx);
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
        });
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
    Value result = buildElementwise(
        rewriter, op.getLoc(), type.getShape(), elem, {},
        [&](OpBuilder &b, Location loc, ValueRange) {
          Value seedScalar = tensor::ExtractOp::create(b, loc, seed, ValueRange{});
          auto [w0, w1] =
              emitPhilox(b, loc, linearIndex(b, loc, type.getShape()), seedScalar);
          auto c = [&](double v) {
            return arith::ConstantOp::create(b, loc, compute,
                                             b.getFloatAttr(compute, v));
          };
          Value r;
          if constexpr (std::is_same_v<OpT, RandomUniformOp>) {
            double low = op.getLow().convertToDouble();
            double high = op.getHigh().convertToDouble();
            Value u = unitUniform(b, loc, w0, w1, compute);
            r = arith::AddFOp::create(
                b, loc, c(low), arith::MulFOp::create(b, loc, u, c(high - low)));
          } else {
            // Box-Muller on two independent words; u1 in (0, 1] avoids log 0.
            Value u1 = arith::SubFOp::create(
                b, loc, c(1.0), unitUniform(b, loc, w0, w0, compute));
            Value u2 = unitUniform(b, loc, w1, w1, compute);
            Value radius = math::SqrtOp::create(
                b, loc,
                arith::MulFOp::create(b, loc, c(-2.0),
                                      math::LogOp::create(b, loc, u1)));
            Value angle = math::CosOp::create(
                b, loc,
                arith::MulFOp::create(b, loc, c(2 * std::numbers::pi), u2));
            Value z = arith::MulFOp::create(b, loc, radius, angle);
            r = arith::AddFOp::create(
                b, loc, c(op.getMean().convertToDouble()),
                arith::MulFOp::create(b, loc, z,
                                      c(op.getStd().convertToDouble())));
          }
          return r.getType() == elem
                     ? r
                     : castScalar(b, loc, r, r.getType(), elem);
        });
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
