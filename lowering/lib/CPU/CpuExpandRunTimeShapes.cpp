//===- CpuExpandRunTimeShapes.cpp - the kiln-cpu-expand-run-time-shapes pass ===//
//
// LLVM 22's expand-strided-metadata builds a null size for a
// memref.expand_shape group of several `?` dims and crashes. Each such
// expansion becomes the reinterpret_cast that pass would have made: the
// source's base and offset, the output_shape as sizes, and within a group
// each dim's stride the next one's times its size, the last the source
// dim's stride.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_KILNCPUEXPANDRUNTIMESHAPES
#include "kiln/Lowering/CPU/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// a * b, folded where both are constants or one is 1.
OpFoldResult multiply(OpBuilder &b, Location loc, OpFoldResult x, OpFoldResult y) {
  std::optional<int64_t> cx = getConstantIntValue(x), cy = getConstantIntValue(y);
  if (cx && cy)
    return b.getIndexAttr(*cx * *cy);
  if (cx == 1)
    return y;
  if (cy == 1)
    return x;
  return arith::MulIOp::create(b, loc, getValueOrCreateConstantIndexOp(b, loc, x),
                               getValueOrCreateConstantIndexOp(b, loc, y))
      .getResult();
}

struct ExpandOfSeveralRunTimeSizes : OpRewritePattern<memref::ExpandShapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(memref::ExpandShapeOp op,
                                PatternRewriter &rewriter) const override {
    MemRefType type = op.getResultType();
    SmallVector<ReassociationIndices> groups = op.getReassociationIndices();
    if (llvm::none_of(groups, [&](const ReassociationIndices &group) {
          return llvm::count_if(group, [&](int64_t d) { return type.isDynamicDim(d); }) > 1;
        }))
      return failure();
    Location loc = op.getLoc();
    auto source = memref::ExtractStridedMetadataOp::create(rewriter, loc, op.getSrc());
    SmallVector<OpFoldResult> sizes = op.getMixedOutputShape();
    SmallVector<OpFoldResult> sourceStrides = source.getConstifiedMixedStrides();
    SmallVector<OpFoldResult> strides(type.getRank());
    for (auto [s, group] : llvm::enumerate(groups)) {
      OpFoldResult stride = sourceStrides[s];
      for (int64_t d : llvm::reverse(group)) {
        strides[d] = stride;
        stride = multiply(rewriter, loc, stride, sizes[d]);
      }
    }
    rewriter.replaceOpWithNewOp<memref::ReinterpretCastOp>(
        op, type, source.getBaseBuffer(), source.getConstifiedMixedOffset(), sizes, strides);
    return success();
  }
};

struct KilnCpuExpandRunTimeShapesPass
    : kiln::impl::KilnCpuExpandRunTimeShapesBase<KilnCpuExpandRunTimeShapesPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ExpandOfSeveralRunTimeSizes>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
