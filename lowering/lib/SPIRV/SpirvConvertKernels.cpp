//===- SpirvConvertKernels.cpp - the kiln-spirv-convert-kernels pass -----===//
//
// Outlined kernels -> spirv.modules, as upstream convert-gpu-to-spirv does
// for Vulkan shaders (each gpu.module converted in a copy beside it; the
// host's launches keep naming the original), with the same pattern sets
// and what they lack: float atomic adds (memref.atomic_rmw addf, from
// kiln-gpu-scatter-adds) become OpAtomicFAddEXT, which the target env allows
// where the device has VK_EXT_shader_atomic_float; floor and ceil divisions
// (folded views of `?` strides delinearise with them) expand to divisions
// that round toward zero.
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
