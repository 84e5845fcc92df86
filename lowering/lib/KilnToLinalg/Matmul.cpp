//===- Matmul.cpp - kiln.matmul -> linalg.matmul / batch_matmul ----------===//
#include "Patterns.h"
#include "kiln/Dialect/KilnOps.h"
#include "kiln/Lowering/KilnToLinalg/Passes.h"
#include "kiln/Lowering/KilnToLinalg/ScalarOps.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace kiln::to_linalg {
namespace {

/// Whether a batched matmul has an operand without batch dims.
bool broadcastsMatrix(Value a, Value b) {
  return cast<RankedTensorType>(a.getType()).getRank() == 2 ||
         cast<RankedTensorType>(b.getType()).getRank() == 2;
}

/// batch_matmul's maps over (batch, m, n, k), without the batch dim for an
/// operand of rank 2.
ArrayAttr batchMatmulMaps(Value a, Value b) {
  MLIRContext *ctx = a.getContext();
  AffineExpr batch, m, n, k;
  bindDims(ctx, batch, m, n, k);
  auto operandMap = [&](Value v, AffineExpr r, AffineExpr c) {
    SmallVector<AffineExpr> exprs = {r, c};
    if (cast<RankedTensorType>(v.getType()).getRank() == 3)
      exprs.insert(exprs.begin(), batch);
    return AffineMapAttr::get(AffineMap::get(4, 0, exprs, ctx));
  };
  return ArrayAttr::get(ctx, {operandMap(a, m, k), operandMap(b, k, n),
                              AffineMapAttr::get(AffineMap::get(4, 0, {batch, m, n}, ctx))});
}

/// NumPy matmul: batch dims broadcast, then collapse into one batch dim of a
/// linalg.batch_matmul (or a plain linalg.matmul without batch dims).
/// f16/bf16 inputs accumulate in f32; the result is rounded to its type.
struct MatmulToLinalg : OpConversionPattern<MatmulOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(MatmulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto resultType = op.getType();
    Type kilnIn = op.getA().getType().getElementType();
    Type kilnOut = resultType.getElementType();
    Type acc = isa<FloatType>(kilnOut) ? computeFloatType(kilnOut)
                                       : signlessType(kilnOut);
    if (isa<Float8E4M3FNType, Float8E5M2Type>(kilnIn))
      acc = rewriter.getF32Type();
    ArrayRef<int64_t> outShape = resultType.getShape();
    int64_t rank = outShape.size();
    int64_t m = outShape[rank - 2], n = outShape[rank - 1];
    ArrayRef<int64_t> batchShape = outShape.drop_back(2);
    int64_t batch = 1;
    for (int64_t d : batchShape)
      batch = ShapedType::isDynamic(d) || ShapedType::isDynamic(batch) ? ShapedType::kDynamic
                                                                       : batch * d;

    // Brings an operand to [batch..., r, c], then to [batch, r, c] or [r, c].
    // A matrix without batch dims stays one: the batch_matmul broadcasts it
    // (a weight shared by every batch is read in place, not copied).
    // A `?` batch dim that `v` broadcasts over is the other operand's; its
    // matrix dims are its own.
    // (Its static matrix dims stay static where the other operand's are
    // `?`: a `?` in their place made a `?`-sized copy of a static 1, whose
    // casts kernel formation rewrote without end.)
    auto prepare = [&](Value v, Value other) {
      auto type = cast<RankedTensorType>(v.getType());
      if (type.getRank() == 2)
        return v;
      int64_t r = type.getShape().drop_back().back(), c = type.getShape().back();
      SmallVector<int64_t> full(batchShape);
      full.push_back(r);
      full.push_back(c);
      if (type.getShape() != ArrayRef<int64_t>(full)) {
        AffineMap map = broadcastMap(type.getShape(), full, getContext());
        SmallVector<Value> either = dynamicSizes(rewriter, loc, full, {v, other});
        SmallVector<Value> own = dynamicSizes(rewriter, loc, full, v), sizes;
        for (auto [d, size] : llvm::enumerate(full))
          if (ShapedType::isDynamic(size))
            sizes.push_back(d < batchShape.size() ? either[sizes.size()] : own[sizes.size()]);
        Value init = emptyTensor(rewriter, loc, full, type.getElementType(), sizes);
        SmallVector<AffineMap> maps = {
            map, AffineMap::getMultiDimIdentityMap(full.size(), getContext())};
        SmallVector<utils::IteratorType> its(full.size(),
                                             utils::IteratorType::parallel);
        v = linalg::GenericOp::create(
                rewriter, loc, init.getType(), v, init, maps, its,
                [](OpBuilder &b, Location l, ValueRange a) {
                  linalg::YieldOp::create(b, l, a[0]);
                })
                .getResult(0);
      }
      return batchShape.empty() ? v : reshapeTo(rewriter, loc, v, {batch, r, c});
    };
    // f8 inputs (of one format each) are decoded to f32 once, then
    // multiplied as f32; the decode is marked, for targets whose kernels
    // multiply f8 as it is.
    auto decoded = [&](Value v, Value kilnOperand) {
      Type format = cast<RankedTensorType>(kilnOperand.getType()).getElementType();
      if (!isa<Float8E4M3FNType, Float8E5M2Type>(format))
        return v;
      auto shape = cast<RankedTensorType>(v.getType()).getShape();
      Value f32 = buildElementwise(rewriter, loc, shape, rewriter.getF32Type(), v,
                                   [&](OpBuilder &nb, Location l, ValueRange x) {
                                     return castScalar(nb, l, x[0], format, nb.getF32Type());
                                   });
      f32.getDefiningOp()->setAttr(kFloat8DecodeAttr, TypeAttr::get(format));
      return f32;
    };
    Value a = prepare(decoded(adaptor.getA(), op.getA()), adaptor.getB());
    Value b = prepare(decoded(adaptor.getB(), op.getB()), adaptor.getA());
    SmallVector<int64_t> accShape = {m, n};
    if (!batchShape.empty())
      accShape.insert(accShape.begin(), batch);
    Value zero = scalarConstant(rewriter, loc, acc, 0.0);
    // M is a's, N is b's, the batch that of whichever has one (a conv's
    // GEMM shares one weight matrix a across a `?` batch of patches b).
    SmallVector<Value> accSizes;
    int64_t accRank = accShape.size();
    auto rankOf = [](Value v) { return cast<RankedTensorType>(v.getType()).getRank(); };
    for (auto [d, size] : llvm::enumerate(accShape)) {
      if (!ShapedType::isDynamic(size))
        continue;
      int64_t at = static_cast<int64_t>(d);
      if (at == accRank - 1)
        accSizes.push_back(tensor::DimOp::create(rewriter, loc, b, rankOf(b) - 1));
      else if (at == accRank - 2)
        accSizes.push_back(tensor::DimOp::create(rewriter, loc, a, rankOf(a) - 2));
      else
        accSizes.push_back(tensor::DimOp::create(rewriter, loc, rankOf(a) == accRank ? a : b, at));
    }
    Value init = linalg::FillOp::create(rewriter, loc, zero,
                                        emptyTensor(rewriter, loc, accShape, acc, accSizes))
                     .getResult(0);
    auto castKind = linalg::TypeFnAttr::get(
        getContext(), isUnsignedKilnType(kilnIn) ? linalg::TypeFn::cast_unsigned
                                                 : linalg::TypeFn::cast_signed);
    // The region reads the cast kind when it is built, so pass it up front.
    NamedAttribute castAttr(rewriter.getStringAttr("cast"), castKind);
    Value product;
    if (batchShape.empty()) {
      product = linalg::MatmulOp::create(rewriter, loc, ValueRange{a, b}, ValueRange{init},
                                         castAttr)
                    .getResult(0);
    } else {
      auto batched = linalg::BatchMatmulOp::create(rewriter, loc, ValueRange{a, b},
                                                   ValueRange{init}, castAttr);
      if (broadcastsMatrix(a, b))
        batched.setIndexingMapsAttr(batchMatmulMaps(a, b));
      product = batched.getResult(0);
    }
    if (acc != signlessType(kilnOut)) {
      product = buildElementwise(
          rewriter, loc, accShape, signlessType(kilnOut), product,
          [&](OpBuilder &nb, Location l, ValueRange v) {
            return castScalar(nb, l, v[0], acc, kilnOut);
          });
    }
    rewriter.replaceOp(op, reshapeTo(rewriter, loc, product, outShape));
    return success();
  }
};

} // namespace

void populateMatmulPatterns(TypeConverter &converter,
                            RewritePatternSet &patterns) {
  patterns.add<MatmulToLinalg>(converter, patterns.getContext());
}

} // namespace kiln::to_linalg
