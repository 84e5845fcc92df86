//===- Attention.cpp - kiln.attention as matmul, softmax, matmul ----------===//
//
// kiln.attention becomes kiln ops that the conversion then lowers in turn:
// scores = matmul(q, k^T) in f32 (f16/bf16 inputs), scaled, masked,
// softmax over keys, rounded to q's type (as fused kernels feed the
// second product), matmul with v in f32, rounded. The score matrix is
// materialised; a fused kernel is a later step.
//
//===----------------------------------------------------------------------===//
#include "Patterns.h"
#include "kiln/Dialect/KilnOps.h"
#include "kiln/Lowering/KilnToLinalg/ScalarOps.h"

#include <cmath>
#include <limits>

using namespace mlir;

namespace kiln::to_linalg {
namespace {

struct AttentionToKilnOps : OpConversionPattern<AttentionOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(AttentionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type element = op.getType().getElementType();
    Type acc = computeFloatType(element);
    auto q = op.getQ().getType();
    int64_t rank = q.getRank(), headDim = q.getShape().back();
    SmallVector<int64_t> scoreShape(q.getShape().drop_back(1));
    scoreShape.push_back(op.getK().getType().getDimSize(rank - 2));
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
    double scale = op.getScale() ? op.getScale()->convertToDouble()
                                 : 1.0 / std::sqrt(static_cast<double>(headDim));
    scores = MulOp::create(rewriter, loc, scores, scalar(acc, scale));
    Value minusInf = scalar(acc, -std::numeric_limits<double>::infinity());
    if (Value mask = adaptor.getMask()) {
      if (cast<RankedTensorType>(mask.getType()).getElementType().isInteger(1))
        scores = SelectOp::create(rewriter, loc, mask, scores, minusInf);
      else
        scores = AddOp::create(rewriter, loc, scores, castTo(mask, acc));
    }
    if (op.getCausal()) {
      // Query i sees keys j <= i (torch's top-left aligned lower triangle).
      auto positions = RankedTensorType::get(ArrayRef(scoreShape).take_back(2), rewriter.getI64Type());
      Value query = IotaOp::create(rewriter, loc, positions, 0);
      Value key = IotaOp::create(rewriter, loc, positions, 1);
      Value visible = LeOp::create(rewriter, loc, key, query);
      scores = SelectOp::create(rewriter, loc, visible, scores, minusInf);
    }
    Value probs = SoftmaxOp::create(rewriter, loc, scoreType, scores, rank - 1);
    SmallVector<int64_t> outShape(op.getType().getShape());
    Value out = MatmulOp::create(rewriter, loc, RankedTensorType::get(outShape, acc),
                                 castTo(probs, element), adaptor.getV());
    rewriter.replaceOp(op, castTo(out, element));
    return success();
  }
};

} // namespace

void populateAttentionPatterns(TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<AttentionToKilnOps>(converter, patterns.getContext());
}

} // namespace kiln::to_linalg
