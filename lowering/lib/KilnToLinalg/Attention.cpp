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

/// The groups that take [batch..., rows, columns] (rank > 3) to [B, rows,
/// columns]. Given, not inferred from the types: [?, 4, ?, E] -> [?, ?, E]
/// fits more than one grouping, and only this one keeps the rows apart.
SmallVector<ReassociationIndices> batchGroups(int64_t rank) {
  SmallVector<ReassociationIndices> groups = {{}, {rank - 2}, {rank - 1}};
  for (int64_t d = 0; d < rank - 2; ++d)
    groups[0].push_back(d);
  return groups;
}

/// q, k, v and the mask as [B, L, E] views, B the product of the batch
/// dims; a mask that broadcasts over only some batch dims is broadcast to
/// all of them first. (A `?` mask dim is the scores' own: `?` never
/// stretches.)
struct BatchOfMatrices {
  Value q, k, v, mask;
};

BatchOfMatrices batchOfMatrices(AttentionOp op, AttentionOp::Adaptor adaptor, OpBuilder &b) {
  Location loc = op.getLoc();
  auto q = op.getQ().getType();
  ArrayRef<int64_t> batchShape = q.getShape().drop_back(2);
  int64_t batch = productOf(batchShape);
  auto rank3 = [&](Value v) -> Value {
    auto shape = cast<RankedTensorType>(v.getType()).getShape();
    if (shape.size() > 3)
      return tensor::CollapseShapeOp::create(b, loc, v, batchGroups(shape.size()));
    return reshapeTo(b, loc, v, {batch, shape[shape.size() - 2], shape.back()});
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
      mask = BroadcastOp::create(b, loc, RankedTensorType::get(full, type.getElementType()), mask);
      maskBatchSize = batch;
    }
    int64_t maskRank = cast<RankedTensorType>(mask.getType()).getRank();
    mask = maskRank > 3 ? tensor::CollapseShapeOp::create(b, loc, mask, batchGroups(maskRank))
                        : reshapeTo(b, loc, mask, {maskBatchSize, maskRows, maskKeys});
  }
  return {rank3(adaptor.getQ()), rank3(adaptor.getK()), rank3(adaptor.getV()), mask};
}

/// `result` ([B, Lq, Ev]) as `op`'s result.
Value fromBatchOfMatrices(AttentionOp op, Value result, OpBuilder &b) {
  int64_t rank = op.getType().getRank();
  if (rank > 3)
    return tensor::ExpandShapeOp::create(b, op.getLoc(), op.getType(), result, batchGroups(rank));
  return reshapeTo(b, op.getLoc(), result, op.getType().getShape());
}

/// kiln_kernel.attention on the [B, L, E] views.
Value buildFusedAttention(AttentionOp op, AttentionOp::Adaptor adaptor, OpBuilder &b) {
  Location loc = op.getLoc();
  BatchOfMatrices views = batchOfMatrices(op, adaptor, b);
  Type element = op.getType().getElementType();
  SmallVector<OpFoldResult> outSizes = {tensor::getMixedSize(b, loc, views.q, 0),
                                        tensor::getMixedSize(b, loc, views.q, 1),
                                        b.getIndexAttr(op.getType().getShape().back())};
  Value out = tensor::EmptyOp::create(b, loc, outSizes, element);
  Value acc = tensor::EmptyOp::create(b, loc, outSizes, computeFloatType(element));
  auto fused = kernel::AttentionOp::create(
      b, loc, TypeRange{out.getType(), acc.getType()}, views.q, views.k, views.v, views.mask,
      out, acc, b.getF64FloatAttr(scaleOf(op)), op.getCausal() ? b.getUnitAttr() : UnitAttr());
  return fromBatchOfMatrices(op, fused.getResult(0), b);
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

/// Attention as kiln ops on q, k, v (and the mask) of any rank, the
/// result of type `type` (but for the sizes the mask fixes, below).
Value buildUnfusedAttention(AttentionOp op, Value q, Value k, Value v, Value mask,
                            RankedTensorType type, OpBuilder &b) {
  Location loc = op.getLoc();
  Type element = type.getElementType();
  Type acc = computeFloatType(element);
  auto qType = cast<RankedTensorType>(q.getType());
  int64_t rank = qType.getRank();
  SmallVector<int64_t> scoreShape(qType.getShape().drop_back(1));
  scoreShape.push_back(cast<RankedTensorType>(k.getType()).getDimSize(rank - 2));
  // A static mask size where the scores have `?` is that size (the
  // verifier let it through, the run checks it): the scores, and the
  // result's batch and rows, take it, as every op on them infers it.
  if (mask) {
    auto maskShape = cast<RankedTensorType>(mask.getType()).getShape();
    for (size_t i = 1; i <= maskShape.size(); ++i)
      if (ShapedType::isDynamic(scoreShape[rank - i]) && maskShape[maskShape.size() - i] != 1)
        scoreShape[rank - i] = maskShape[maskShape.size() - i];
  }
  auto scoreType = RankedTensorType::get(scoreShape, acc);
  auto scalar = [&](Type t, double value) -> Value {
    return FillOp::create(b, loc, RankedTensorType::get({}, t), b.getF64FloatAttr(value));
  };
  auto castTo = [&](Value x, Type t) -> Value {
    auto xType = cast<RankedTensorType>(x.getType());
    if (xType.getElementType() == t)
      return x;
    return CastOp::create(b, loc, RankedTensorType::get(xType.getShape(), t), x);
  };

  SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  std::swap(perm[rank - 2], perm[rank - 1]);
  Value kT = TransposeOp::create(b, loc, k, perm);
  Value scores = MatmulOp::create(b, loc, scoreType, q, kT);
  scores = MulOp::create(b, loc, scores, scalar(acc, scaleOf(op)));
  Value minusInf = scalar(acc, -std::numeric_limits<double>::infinity());
  if (mask) {
    if (cast<RankedTensorType>(mask.getType()).getElementType().isInteger(1))
      scores = SelectOp::create(b, loc, mask, scores, minusInf);
    else
      scores = AddOp::create(b, loc, scores, castTo(mask, acc));
  }
  if (op.getCausal()) {
    Value visible = causalMask(b, loc, q, k);
    scores = SelectOp::create(b, loc, visible, scores, minusInf);
  }
  Value probs = SoftmaxOp::create(b, loc, scoreType, scores, rank - 1);
  SmallVector<int64_t> outShape(ArrayRef<int64_t>(scoreShape).drop_back());
  outShape.push_back(type.getShape().back());
  Value out = MatmulOp::create(b, loc, RankedTensorType::get(outShape, acc),
                               castTo(probs, element), v);
  out = castTo(out, element);
  if (out.getType() != type)
    out = tensor::CastOp::create(b, loc, type, out);
  return out;
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
    // Above rank 3, a `?` batch dim runs on [B, L, E] views: the matmuls
    // take `?` dims up to rank 3.
    auto type = op.getType();
    if (type.getRank() > 3 && llvm::any_of(type.getShape().drop_back(2), ShapedType::isDynamic)) {
      BatchOfMatrices views = batchOfMatrices(op, adaptor, rewriter);
      auto q = cast<RankedTensorType>(views.q.getType());
      auto viewType = RankedTensorType::get(
          {q.getDimSize(0), q.getDimSize(1), type.getShape().back()}, type.getElementType());
      Value out = buildUnfusedAttention(op, views.q, views.k, views.v, views.mask, viewType,
                                        rewriter);
      rewriter.replaceOp(op, fromBatchOfMatrices(op, out, rewriter));
      return success();
    }
    rewriter.replaceOp(op, buildUnfusedAttention(op, adaptor.getQ(), adaptor.getK(),
                                                 adaptor.getV(), adaptor.getMask(), type,
                                                 rewriter));
    return success();
  }
};

} // namespace

void populateAttentionPatterns(TypeConverter &converter, RewritePatternSet &patterns,
                               AttentionFusion fusion) {
  patterns.add<AttentionToKilnOps>(converter, patterns.getContext(), fusion);
}

} // namespace kiln::to_linalg
