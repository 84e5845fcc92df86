//===- Conv.cpp - kiln.conv2d and the pools -> linalg.generic -------------===//
//
// Each becomes one linalg.generic over the output with the window (and, for
// conv2d, the input channels of a group) as reduction dims, on an input
// padded by fill + insert_slice: every target runs it as one thread (or
// loop iteration) per output element with the reduction inside. f16/bf16
// accumulate in f32; an elementwise epilogue adds the bias (conv2d) or
// divides by the window size (avg_pool2d) and rounds to the element type.
//
//===----------------------------------------------------------------------===//
#include "Patterns.h"
#include "kiln/Dialect/KilnOps.h"
#include "kiln/Lowering/KilnToLinalg/ScalarOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <limits>

using namespace mlir;

namespace kiln::to_linalg {
namespace {

/// `x` ([..., H, W]) padded by `padding` (h, w) on both sides of its last
/// two dims.
Value padSpatial(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> padding,
                 Type element, double value) {
  if (padding[0] == 0 && padding[1] == 0)
    return x;
  int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  SmallVector<int64_t> pads(rank, 0);
  pads[rank - 2] = padding[0];
  pads[rank - 1] = padding[1];
  return buildPad(b, loc, x, pads, pads, scalarConstant(b, loc, element, value));
}

/// The input position of output position `out` and window offset `tap`
/// along one spatial dim.
AffineExpr windowIndex(AffineExpr out, AffineExpr tap, int64_t stride, int64_t dilation) {
  return out * stride + tap * dilation;
}

/// A filled accumulator of `shape` in the compute type of `element`.
Value accumulator(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, Type element,
                  double init) {
  Type acc = computeFloatType(element);
  return linalg::FillOp::create(b, loc, scalarConstant(b, loc, acc, init),
                                emptyTensor(b, loc, shape, acc))
      .getResult(0);
}

/// x [N, G*Cg, H, W], w [G*Og, Cg, KH, KW] -> [N, G*Og, OH, OW] through
/// iteration dims (n, g, og, oh, ow, c, kh, kw) on [N, G, Cg, H, W] and
/// [G, Og, Cg, KH, KW]: groups need no special case (depthwise is Cg = 1).
struct Conv2dToGeneric : OpConversionPattern<Conv2dOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(Conv2dOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    Type element = op.getType().getElementType();
    Type acc = computeFloatType(element);
    ArrayRef<int64_t> outShape = op.getType().getShape();
    ArrayRef<int64_t> wShape = op.getW().getType().getShape();
    int64_t groups = op.getGroups(), n = outShape[0], og = outShape[1] / groups,
            cg = wShape[1];
    ArrayRef<int64_t> stride = op.getStride(), dilation = op.getDilation();

    Value x = padSpatial(rewriter, loc, adaptor.getX(), op.getPadding(), element, 0.0);
    ArrayRef<int64_t> padded = cast<RankedTensorType>(x.getType()).getShape();
    x = reshapeTo(rewriter, loc, x, {n, groups, cg, padded[2], padded[3]});
    Value w = reshapeTo(rewriter, loc, adaptor.getW(),
                        {groups, og, cg, wShape[2], wShape[3]});
    SmallVector<int64_t> groupedOut = {n, groups, og, outShape[2], outShape[3]};
    Value init = accumulator(rewriter, loc, groupedOut, element, 0.0);

    AffineExpr dn, dg, dog, doh, dow, dc, dkh, dkw;
    bindDims(ctx, dn, dg, dog, doh, dow, dc, dkh, dkw);
    SmallVector<AffineMap> maps = {
        AffineMap::get(8, 0,
                       {dn, dg, dc, windowIndex(doh, dkh, stride[0], dilation[0]),
                        windowIndex(dow, dkw, stride[1], dilation[1])},
                       ctx),
        AffineMap::get(8, 0, {dg, dog, dc, dkh, dkw}, ctx),
        AffineMap::get(8, 0, {dn, dg, dog, doh, dow}, ctx)};
    SmallVector<utils::IteratorType> iterators(5, utils::IteratorType::parallel);
    iterators.append(3, utils::IteratorType::reduction);
    Value sum = linalg::GenericOp::create(
                    rewriter, loc, init.getType(), ValueRange{x, w}, init, maps,
                    iterators,
                    [&](OpBuilder &b, Location l, ValueRange args) {
                      Value xv = castScalar(b, l, args[0], element, acc);
                      Value wv = castScalar(b, l, args[1], element, acc);
                      Value product = arith::MulFOp::create(b, l, xv, wv);
                      linalg::YieldOp::create(
                          b, l, arith::AddFOp::create(b, l, args[2], product).getResult());
                    })
                    .getResult(0);
    sum = reshapeTo(rewriter, loc, sum, outShape);

    SmallVector<Value> inputs = {sum};
    if (Value bias = adaptor.getBias())
      inputs.push_back(reshapeTo(rewriter, loc, bias, {outShape[1], 1, 1}));
    if (inputs.size() == 1 && acc == element) {
      rewriter.replaceOp(op, sum);
      return success();
    }
    rewriter.replaceOp(
        op, buildElementwise(rewriter, loc, outShape, element, inputs,
                             [&](OpBuilder &b, Location l, ValueRange args) {
                               Value v = args[0];
                               if (args.size() > 1)
                                 v = arith::AddFOp::create(
                                     b, l, v, castScalar(b, l, args[1], element, acc));
                               return castScalar(b, l, v, acc, element);
                             }));
    return success();
  }
};

/// max_pool2d / avg_pool2d on x [batch..., H, W]: iteration dims (batch...,
/// oh, ow, kh, kw); a [KH, KW] operand gives the window dims their range.
template <typename OpT, bool isMax>
struct PoolToGeneric : OpConversionPattern<OpT> {
  using OpConversionPattern<OpT>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpT op, typename OpT::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = this->getContext();
    Type element = op.getType().getElementType();
    Type acc = computeFloatType(element);
    ArrayRef<int64_t> outShape = op.getType().getShape();
    ArrayRef<int64_t> kernel = op.getKernel();
    ArrayRef<int64_t> stride = op.getStride().value_or(kernel);
    double identity = isMax ? -std::numeric_limits<double>::infinity() : 0.0;
    Value x = padSpatial(rewriter, loc, adaptor.getX(), op.getPadding(), element, identity);
    Value init = accumulator(rewriter, loc, outShape, element, identity);
    Value window = emptyTensor(rewriter, loc, kernel, acc);

    int64_t rank = outShape.size(), dims = rank + 2;
    AffineExpr kh = getAffineDimExpr(rank, ctx), kw = getAffineDimExpr(rank + 1, ctx);
    SmallVector<AffineExpr> xExprs, outExprs;
    for (int64_t d = 0; d < rank; ++d)
      outExprs.push_back(getAffineDimExpr(d, ctx));
    xExprs.assign(outExprs.begin(), outExprs.end() - 2);
    xExprs.push_back(windowIndex(outExprs[rank - 2], kh, stride[0], 1));
    xExprs.push_back(windowIndex(outExprs[rank - 1], kw, stride[1], 1));
    SmallVector<AffineMap> maps = {AffineMap::get(dims, 0, xExprs, ctx),
                                   AffineMap::get(dims, 0, {kh, kw}, ctx),
                                   AffineMap::get(dims, 0, outExprs, ctx)};
    SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
    iterators.append(2, utils::IteratorType::reduction);
    Value reduced =
        linalg::GenericOp::create(
            rewriter, loc, init.getType(), ValueRange{x, window}, init, maps, iterators,
            [&](OpBuilder &b, Location l, ValueRange args) {
              Value v = castScalar(b, l, args[0], element, acc);
              Value r = isMax ? arith::MaximumFOp::create(b, l, args[2], v).getResult()
                              : arith::AddFOp::create(b, l, args[2], v).getResult();
              linalg::YieldOp::create(b, l, r);
            })
            .getResult(0);
    if (isMax && acc == element) {
      rewriter.replaceOp(op, reduced);
      return success();
    }
    double count = static_cast<double>(kernel[0] * kernel[1]);
    rewriter.replaceOp(
        op, buildElementwise(rewriter, loc, outShape, element, reduced,
                             [&](OpBuilder &b, Location l, ValueRange args) {
                               Value v = args[0];
                               if (!isMax)
                                 v = arith::DivFOp::create(
                                     b, l, v, scalarConstant(b, l, acc, count));
                               return castScalar(b, l, v, acc, element);
                             }));
    return success();
  }
};

} // namespace

void populateConvPatterns(TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<Conv2dToGeneric, PoolToGeneric<MaxPool2dOp, true>,
               PoolToGeneric<AvgPool2dOp, false>>(converter, patterns.getContext());
}

} // namespace kiln::to_linalg
