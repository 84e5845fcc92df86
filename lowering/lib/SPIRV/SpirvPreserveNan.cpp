//===- SpirvPreserveNan.cpp - the kiln-spirv-preserve-nan pass -----------===//
#include "kiln/Lowering/SPIRV/Passes.h"

#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"

namespace kiln {
#define GEN_PASS_DEF_KILNSPIRVPRESERVENAN
#include "kiln/Lowering/SPIRV/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
struct KilnSpirvPreserveNanPass
    : kiln::impl::KilnSpirvPreserveNanBase<KilnSpirvPreserveNanPass> {
  using KilnSpirvPreserveNanBase::KilnSpirvPreserveNanBase;

  void runOnOperation() override {
    spirv::ModuleOp module = getOperation();
    SmallVector<spirv::EntryPointOp> entries(module.getOps<spirv::EntryPointOp>());
    for (spirv::EntryPointOp entry : entries) {
      auto fn = module.lookupSymbol<spirv::FuncOp>(entry.getFn());
      OpBuilder b(entry);
      b.setInsertionPointAfter(entry);
      for (int32_t width : widths)
        spirv::ExecutionModeOp::create(b, entry.getLoc(), fn,
                                       spirv::ExecutionMode::SignedZeroInfNanPreserve,
                                       {width});
    }
  }
};
} // namespace
