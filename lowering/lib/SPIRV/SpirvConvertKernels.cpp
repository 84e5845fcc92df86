//===- SpirvConvertKernels.cpp - the kiln-spirv-convert-kernels pass -----===//
//
// Outlined kernels -> spirv.modules, as upstream convert-gpu-to-spirv does
// for Vulkan shaders (each gpu.module converted in a copy beside it; the
// host's launches keep naming the original), with the same pattern sets
// and what they lack: float atomic adds (memref.atomic_rmw addf, from
// kiln-gpu-scatter-adds) become OpAtomicFAddEXT, which the target env allows
// where the device has VK_EXT_shader_atomic_float; floor and ceil divisions
// (folded views of `?` strides delinearise with them) expand to divisions
// that round toward zero; bf16, which only moves bits by now
// (kiln-spirv-bf16-as-i16), is renamed i16.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/SPIRV/Passes.h"

#include "mlir/Conversion/ArithToSPIRV/ArithToSPIRV.h"
#include "mlir/Conversion/FuncToSPIRV/FuncToSPIRV.h"
#include "mlir/Conversion/GPUToSPIRV/GPUToSPIRV.h"
#include "mlir/Conversion/MemRefToSPIRV/MemRefToSPIRV.h"
#include "mlir/Conversion/SCFToSPIRV/SCFToSPIRV.h"
#include "mlir/Conversion/VectorToSPIRV/VectorToSPIRV.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"
#include "mlir/Dialect/SPIRV/Transforms/SPIRVConversion.h"
#include "mlir/IR/AttrTypeSubElements.h"

namespace kiln {
#define GEN_PASS_DEF_KILNSPIRVCONVERTKERNELS
#include "kiln/Lowering/SPIRV/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// memref.atomic_rmw addf -> OpAtomicFAddEXT on the element, relaxed: the
/// adds of a scatter need no order among themselves.
struct AtomicFAddToSpirv final : OpConversionPattern<memref::AtomicRMWOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult matchAndRewrite(memref::AtomicRMWOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    if (op.getKind() != arith::AtomicRMWKind::addf)
      return rewriter.notifyMatchFailure(op, "not a float add");
    const auto &types = *getTypeConverter<SPIRVTypeConverter>();
    Value element = spirv::getElementPtr(types, op.getMemRefType(), adaptor.getMemref(),
                                         adaptor.getIndices(), op.getLoc(), rewriter);
    Type result = types.convertType(op.getType());
    if (!element || !result)
      return rewriter.notifyMatchFailure(op, "no SPIR-V element pointer or type");
    auto storage = cast<spirv::PointerType>(element.getType()).getStorageClass();
    spirv::Scope scope = storage == spirv::StorageClass::Workgroup ? spirv::Scope::Workgroup
                                                                    : spirv::Scope::Device;
    rewriter.replaceOpWithNewOp<spirv::EXTAtomicFAddOp>(
        op, result, element, scope, spirv::MemorySemantics::None, adaptor.getValue());
    return success();
  }
};

/// bf16 -> i16 in `kernels`' types, signatures and constants (their bits).
/// SPIR-V has no bf16; after kiln-spirv-bf16-as-i16 its values are only
/// loaded, stored, selected, yielded and bitcast to i16, which mean the same
/// on i16. (The kernels' launches are not checked against this copy.)
void renameBf16AsI16(Operation *kernels) {
  MLIRContext *ctx = kernels->getContext();
  Type bf16 = BFloat16Type::get(ctx), i16 = IntegerType::get(ctx, 16);
  AttrTypeReplacer rename;
  rename.addReplacement([&](FloatType t) -> std::optional<Type> {
    return t == bf16 ? std::optional<Type>(i16) : std::nullopt;
  });
  rename.addReplacement([&](FloatAttr a) -> std::optional<Attribute> {
    if (a.getType() != bf16)
      return std::nullopt;
    return IntegerAttr::get(i16, a.getValue().bitcastToAPInt());
  });
  rename.addReplacement([&](DenseElementsAttr a) -> std::pair<Attribute, WalkResult> {
    if (a.getElementType() != bf16)
      return {a, WalkResult::advance()};
    return {a.bitcast(i16), WalkResult::skip()};
  });
  rename.recursivelyReplaceElementsIn(kernels, /*replaceAttrs=*/true, /*replaceLocs=*/false,
                                      /*replaceTypes=*/true);
  kernels->walk([](arith::BitcastOp cast) {
    if (cast.getIn().getType() == cast.getType()) {
      cast.replaceAllUsesWith(cast.getIn());
      cast.erase();
    }
  });
}

struct KilnSpirvConvertKernelsPass
    : kiln::impl::KilnSpirvConvertKernelsBase<KilnSpirvConvertKernelsPass> {
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    SmallVector<gpu::GPUModuleOp> originals(getOperation().getOps<gpu::GPUModuleOp>());
    for (gpu::GPUModuleOp original : originals) {
      OpBuilder b(original);
      Operation *copy = b.clone(*original);
      spirv::MemorySpaceToStorageClassConverter spaces(spirv::mapMemorySpaceToVulkanStorageClass);
      spirv::convertMemRefTypesAndAttrs(copy, spaces);
      renameBf16AsI16(copy);

      spirv::TargetEnvAttr env = spirv::lookupTargetEnvOrDefault(copy);
      std::unique_ptr<ConversionTarget> target = SPIRVConversionTarget::get(env);
      SPIRVTypeConverter types(env);
      populateMMAToSPIRVCoopMatrixTypeConversion(types);
      RewritePatternSet patterns(context);
      populateGPUToSPIRVPatterns(types, patterns);
      populateGpuWMMAToSPIRVCoopMatrixKHRConversionPatterns(types, patterns);
      ScfToSPIRVContext scfContext;
      populateSCFToSPIRVPatterns(types, scfContext, patterns);
      arith::populateArithToSPIRVPatterns(types, patterns);
      arith::populateCeilFloorDivExpandOpsPatterns(patterns);
      populateMemRefToSPIRVPatterns(types, patterns);
      populateFuncToSPIRVPatterns(types, patterns);
      populateVectorToSPIRVPatterns(types, patterns);
      patterns.add<AtomicFAddToSpirv>(types, context);
      if (failed(applyFullConversion(copy, *target, std::move(patterns))))
        return signalPassFailure();
    }
  }
};

} // namespace
