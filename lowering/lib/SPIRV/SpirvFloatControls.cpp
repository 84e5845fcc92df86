//===- SpirvFloatControls.cpp - the kiln-spirv-float-controls pass -------===//
#include "kiln/Lowering/SPIRV/Passes.h"

#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"

namespace kiln {
#define GEN_PASS_DEF_KILNSPIRVFLOATCONTROLS
#include "kiln/Lowering/SPIRV/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
struct KilnSpirvFloatControlsPass
    : kiln::impl::KilnSpirvFloatControlsBase<KilnSpirvFloatControlsPass> {
  using KilnSpirvFloatControlsBase::KilnSpirvFloatControlsBase;

  void runOnOperation() override {
    spirv::ModuleOp module = getOperation();
    SmallVector<spirv::EntryPointOp> entries(module.getOps<spirv::EntryPointOp>());
    for (spirv::EntryPointOp entry : entries) {
      auto fn = module.lookupSymbol<spirv::FuncOp>(entry.getFn());
      OpBuilder b(entry);
      b.setInsertionPointAfter(entry);
      auto declare = [&](spirv::ExecutionMode mode, ArrayRef<int32_t> widths) {
        for (int32_t width : widths)
          spirv::ExecutionModeOp::create(b, entry.getLoc(), fn, mode, {width});
      };
      declare(spirv::ExecutionMode::SignedZeroInfNanPreserve, nanWidths);
      declare(spirv::ExecutionMode::DenormPreserve, denormWidths);
    }
  }
};
} // namespace
