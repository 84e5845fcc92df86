//===- SpirvBf16AsI16.cpp - the kiln-spirv-bf16-as-i16 pass ----------------===//
//
// bf16 on Vulkan: arithmetic in f32, the values' bits in i16. After this
// pass no op computes on bf16: what is left on it only moves bits, and
// kiln-spirv-convert-kernels renames the type i16 in the kernels it
// converts.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/SPIRV/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_KILNSPIRVBF16ASI16
#include "kiln/Lowering/SPIRV/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
/// bf16 -> f64 (a linalg op's implicit widening: a bf16 matmul into f64)
/// through f32, both exact: upstream expands bf16 <-> f32 only.
struct WidenBf16ThroughF32 final : OpRewritePattern<arith::ExtFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::ExtFOp op, PatternRewriter &rewriter) const override {
    Type in = op.getIn().getType(), f32 = rewriter.getF32Type();
    if (!getElementTypeOrSelf(in).isBF16() || getElementTypeOrSelf(op.getType()).isF32())
      return failure();
    auto vector = dyn_cast<VectorType>(in);
    Value wide = arith::ExtFOp::create(rewriter, op.getLoc(), vector ? vector.clone(f32) : f32,
                                       op.getIn());
    rewriter.replaceOpWithNewOp<arith::ExtFOp>(op, op.getType(), wide);
    return success();
  }
};

struct SpirvBf16AsI16
    : kiln::impl::KilnSpirvBf16AsI16Base<SpirvBf16AsI16> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    Type bf16 = BFloat16Type::get(ctx);
    // Any arith op still computing on bf16 (kiln's lowering emits none but
    // compares and conversions of casts) computes in f32 between an extf and
    // a truncf.
    TypeConverter emulated;
    arith::populateEmulateUnsupportedFloatsConversions(emulated, {bf16},
                                                       Float32Type::get(ctx));
    ConversionTarget target(*ctx);
    arith::populateEmulateUnsupportedFloatsLegality(target, emulated);
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    RewritePatternSet toF32(ctx);
    arith::populateEmulateUnsupportedFloatsPatterns(toF32, emulated);
    if (failed(applyPartialConversion(getOperation(), target, std::move(toF32))))
      return signalPassFailure();

    RewritePatternSet expand(ctx);
    expand.add<WidenBf16ThroughF32>(ctx);
    arith::populateExpandBFloat16Patterns(expand);
    if (failed(applyPatternsGreedily(getOperation(), std::move(expand))))
      return signalPassFailure();
  }
};
} // namespace
