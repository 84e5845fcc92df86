//===- Attention.cpp - kiln.attention as one fused kernel -----------------===//
//
// Where the target fuses it: kiln_kernel.attention on [batch, rows,
// columns] views of the operands (batch dims flattened into one), a kernel
// of its own that each target builds without a score matrix in memory;
// batch and sequence lengths may be run-time sizes. Elsewhere: kiln ops
// that the conversion then lowers in turn: scores = matmul(q, k^T) in f32
// (f16/bf16 inputs), scaled, masked, softmax over keys, rounded to q's
// type (as fused kernels feed the second product), matmul with v in f32,
// rounded; the score matrix is materialised.
//
//===----------------------------------------------------------------------===//
#include "Patterns.h"
#include "kiln/Dialect/KilnOps.h"
#include "kiln/Lowering/Kernels/KernelOps.h"
#include "kiln/Lowering/KilnToLinalg/ScalarOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>
#include <limits>

using namespace mlir;

namespace kiln::to_linalg {
namespace {

double scaleOf(AttentionOp op) {
  int64_t headDim = op.getQ().getType().getShape().back();
  return op.getScale() ? op.getScale()->convertToDouble()
                       : 1.0 / std::sqrt(static_cast<double>(headDim));
}

/// The product of `sizes`, `?` where one is.
int64_t productOf(ArrayRef<int64_t> sizes) {
  return llvm::any_of(sizes, ShapedType::isDynamic) ? ShapedType::kDynamic
                                                     : ShapedType::getNumElements(sizes);
}

/// kiln_kernel.attention on [B, L, E] views, B the product of the batch
/// dims; a mask that broadcasts over only some batch dims is broadcast to
/// all of them first. (A `?` mask dim is the scores' own: `?` never
/// stretches.)
Value buildFusedAttention(AttentionOp op, AttentionOp::Adaptor adaptor,
                          ConversionPatternRewriter &rewriter) {
  Location loc = op.getLoc();
  auto q = op.getQ().getType();
  ArrayRef<int64_t> batchShape = q.getShape().drop_back(2);
  int64_t batch = productOf(batchShape);
  auto rank3 = [&](Value v) {
    auto shape = cast<RankedTensorType>(v.getType()).getShape();
    return reshapeTo(rewriter, loc, v, {batch, shape[shape.size() - 2], shape.back()});
  };
  Value mask = adaptor.getMask();
  if (mask) {
    // The mask's sizes right-aligned to [batch..., Lq, Lk].
    auto type = cast<RankedTensorType>(mask.getType());
    SmallVector<int64_t> sizes(q.getRank() - type.getRank(), 1);
    llvm::append_range(sizes, type.getShape());
    ArrayRef<int64_t> maskBatch = ArrayRef(sizes).drop_back(2);
    int64_t maskRows = sizes[sizes.size() - 2], maskKeys = sizes.back();
    int64_t maskBatchSize = productOf(maskBatch);
    if (maskBatchSize != 1 && maskBatch != batchShape) {
      SmallVector<int64_t> full(batchShape);
      llvm::append_range(full, ArrayRef<int64_t>{maskRows, maskKeys});
      mask = BroadcastOp::create(rewriter, loc, RankedTensorType::get(full, type.getElementType()), mask);
      maskBatchSize = batch;
    }
    mask = reshapeTo(rewriter, loc, mask, {maskBatchSize, maskRows, maskKeys});
  }
  auto v = op.getV().getType();
  Type element = q.getElementType();
  Value q3 = rank3(adaptor.getQ());
  SmallVector<OpFoldResult> outSizes = {tensor::getMixedSize(rewriter, loc, q3, 0),
                                        tensor::getMixedSize(rewriter, loc, q3, 1),
                                        rewriter.getIndexAttr(v.getDimSize(v.getRank() - 1))};
  Value out = tensor::EmptyOp::create(rewriter, loc, outSizes, element);
  Value acc = tensor::EmptyOp::create(rewriter, loc, outSizes, computeFloatType(element));
  auto fused = kernel::AttentionOp::create(
      rewriter, loc, TypeRange{out.getType(), acc.getType()}, q3,
      rank3(adaptor.getK()), rank3(adaptor.getV()), mask, out, acc,
      rewriter.getF64FloatAttr(scaleOf(op)), op.getCausal() ? rewriter.getUnitAttr() : UnitAttr());
  return reshapeTo(rewriter, loc, fused.getResult(0), op.getType().getShape());
}

/// [Lq, Lk] booleans, true where query i sees key j <= i (torch's top-left
/// aligned lower triangle), of q's and k's sequence lengths (known at run
/// time only, too).
Value causalMask(OpBuilder &b, Location loc, Value q, Value k) {
  int64_t rank = cast<RankedTensorType>(q.getType()).getRank();
  SmallVector<OpFoldResult> sizes = {tensor::getMixedSize(b, loc, q, rank - 2),
                                     tensor::getMixedSize(b, loc, k, rank - 2)};
  Value empty = tensor::EmptyOp::create(b, loc, sizes, b.getI1Type());
  SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(2, b.getContext())};
  SmallVector<utils::IteratorType> iterators(2, utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, empty.getType(), ValueRange{}, empty, maps, iterators,
             [](OpBuilder &nb, Location l, ValueRange) {
               Value query = linalg::IndexOp::create(nb, l, 0);
               Value key = linalg::IndexOp::create(nb, l, 1);
               Value visible = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ule, key, query);
               linalg::YieldOp::create(nb, l, visible);
             })
      .getResult(0);
}

struct AttentionToKilnOps : OpConversionPattern<AttentionOp> {
  AttentionToKilnOps(TypeConverter &converter, MLIRContext *ctx, AttentionFusion fusion)
      : OpConversionPattern(converter, ctx), fusion(fusion) {}
  AttentionFusion fusion;

  bool fuses(AttentionOp op) const {
    if (fusion == AttentionFusion::none)
      return false;
    return fusion == AttentionFusion::all ||
           fitsTensorCoreAttention(op.getType().getElementType(),
                                   op.getQ().getType().getShape().back(),
                                   op.getV().getType().getShape().back());
  }

  LogicalResult
  matchAndRewrite(AttentionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (fuses(op)) {
      rewriter.replaceOp(op, buildFusedAttention(op, adaptor, rewriter));
      return success();
    }
    Location loc = op.getLoc();
    Type element = op.getType().getElementType();
    Type acc = computeFloatType(element);
    auto q = op.getQ().getType();
    int64_t rank = q.getRank();
    SmallVector<int64_t> scoreShape(q.getShape().drop_back(1));
    scoreShape.push_back(op.getK().getType().getDimSize(rank - 2));
    // A static mask size where the scores have `?` is that size (the
    // verifier let it through, the run checks it): the scores, and the
    // result's batch and rows, take it, as every op on them infers it.
    if (Value mask = adaptor.getMask()) {
      auto maskShape = cast<RankedTensorType>(mask.getType()).getShape();
      for (size_t i = 1; i <= maskShape.size(); ++i)
        if (ShapedType::isDynamic(scoreShape[rank - i]) && maskShape[maskShape.size() - i] != 1)
          scoreShape[rank - i] = maskShape[maskShape.size() - i];
    }
    auto scoreType = RankedTensorType::get(scoreShape, acc);
    auto scalar = [&](Type type, double value) -> Value {
      return FillOp::create(rewriter, loc, RankedTensorType::get({}, type),
                            rewriter.getF64FloatAttr(value));
    };
    auto castTo = [&](Value v, Type type) -> Value {
      auto t = cast<RankedTensorType>(v.getType());
      if (t.getElementType() == type)
        return v;
      return CastOp::create(rewriter, loc, RankedTensorType::get(t.getShape(), type), v);
    };

    SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, rank));
    std::swap(perm[rank - 2], perm[rank - 1]);
    Value kT = TransposeOp::create(rewriter, loc, adaptor.getK(), perm);
    Value scores = MatmulOp::create(rewriter, loc, scoreType, adaptor.getQ(), kT);
    scores = MulOp::create(rewriter, loc, scores, scalar(acc, scaleOf(op)));
    Value minusInf = scalar(acc, -std::numeric_limits<double>::infinity());
    if (Value mask = adaptor.getMask()) {
      if (cast<RankedTensorType>(mask.getType()).getElementType().isInteger(1))
        scores = SelectOp::create(rewriter, loc, mask, scores, minusInf);
      else
        scores = AddOp::create(rewriter, loc, scores, castTo(mask, acc));
    }
    if (op.getCausal()) {
      Value visible = causalMask(rewriter, loc, adaptor.getQ(), adaptor.getK());
      scores = SelectOp::create(rewriter, loc, visible, scores, minusInf);
    }
    Value probs = SoftmaxOp::create(rewriter, loc, scoreType, scores, rank - 1);
    SmallVector<int64_t> outShape(ArrayRef<int64_t>(scoreShape).drop_back());
    outShape.push_back(op.getType().getShape().back());
    Value out = MatmulOp::create(rewriter, loc, RankedTensorType::get(outShape, acc),
                                 castTo(probs, element), adaptor.getV());
    out = castTo(out, element);
    if (out.getType() != op.getType())
      out = tensor::CastOp::create(rewriter, loc, op.getType(), out);
    rewriter.replaceOp(op, out);
    return success();
  }
};

} // namespace

void populateAttentionPatterns(TypeConverter &converter, RewritePatternSet &patterns,
                               AttentionFusion fusion) {
  patterns.add<AttentionToKilnOps>(converter, patterns.getContext(), fusion);
}

} // namespace kiln::to_linalg
