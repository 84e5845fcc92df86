//===- ConvertKilnToLinalg.cpp - the kiln-convert-to-linalg pass ---------===//
#include "Patterns.h"
#include "kiln/Dialect/KilnOps.h"
#include "kiln/Lowering/Kernels/KernelOps.h"
#include "kiln/Lowering/KilnToLinalg/DynamicShapes.h"
#include "kiln/Lowering/KilnToLinalg/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Transforms/DialectConversion.h"

namespace kiln {
#define GEN_PASS_DEF_CONVERTKILNTOLINALG
#include "kiln/Lowering/KilnToLinalg/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// Rejects what the kernels cannot express (`?` dims outside the slice of
/// DynamicShapes.h), naming the op.
LogicalResult checkLowerable(ModuleOp module) {
  WalkResult result = module.walk([](Operation *op) {
    if (op->getDialect() && op->getDialect()->getNamespace() != "kiln")
      return WalkResult::advance();
    for (Type t : llvm::concat<const Type>(op->getOperandTypes(),
                                           op->getResultTypes())) {
      auto tensor = dyn_cast<RankedTensorType>(t);
      if (!tensor)
        continue;
      if (!tensor.hasStaticShape() && !kiln::lowersWithDynamicDims(op)) {
        op->emitError() << "'" << op->getName() << "' with dynamic dims ("
                        << tensor << ") is not supported yet";
        return WalkResult::interrupt();
      }
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

/// Tells fill, iota and random ops with `?` dims where their sizes come
/// from (kSizeSourcesAttrName) where the compiler has not, naming the op where
/// nothing does.
LogicalResult annotateSizeSources(ModuleOp module) {
  for (auto func : module.getOps<func::FuncOp>())
    if (auto ok = kiln::annotateSizeSources(func); !ok)
      return func.emitError() << ok.error().message;
  return success();
}

struct ConvertKilnToLinalgPass
    : kiln::impl::ConvertKilnToLinalgBase<ConvertKilnToLinalgPass> {
  using ConvertKilnToLinalgBase::ConvertKilnToLinalgBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(checkLowerable(module)) || failed(annotateSizeSources(module)))
      return signalPassFailure();
    MLIRContext *ctx = &getContext();
    TypeConverter converter;
    converter.addConversion([](Type t) { return t; });
    converter.addConversion([](RankedTensorType t) -> Type {
      return kiln::to_linalg::signlessTensorType(t);
    });

    ConversionTarget target(*ctx);
    target.addIllegalDialect<kiln::KilnDialect>();
    target.addLegalOp<ModuleOp>();
    target.addLegalDialect<linalg::LinalgDialect, tensor::TensorDialect,
                           arith::ArithDialect, math::MathDialect,
                           scf::SCFDialect, kiln::kernel::KilnKernelDialect>();
    target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp f) {
      return converter.isSignatureLegal(f.getFunctionType());
    });
    target.addDynamicallyLegalOp<func::ReturnOp, func::CallOp>(
        [&](Operation *op) { return converter.isLegal(op); });

    RewritePatternSet patterns(ctx);
    kiln::to_linalg::populateElementwisePatterns(converter, patterns);
    kiln::to_linalg::populateDataMovementPatterns(converter, patterns);
    kiln::to_linalg::populateReductionPatterns(converter, patterns);
    kiln::to_linalg::populateMatmulPatterns(converter, patterns);
    kiln::to_linalg::populateQuantizePatterns(converter, patterns);
    kiln::to_linalg::populateConvPatterns(converter, patterns);
    kiln::to_linalg::populateAttentionPatterns(converter, patterns, attentionFusion);
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns,
                                                                   converter);
    populateReturnOpTypeConversionPattern(patterns, converter);
    populateCallOpTypeConversionPattern(patterns, converter);
    if (failed(applyFullConversion(module, target, std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
