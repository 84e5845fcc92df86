//===- SpirvInt64Atomics.cpp - the kiln-spirv-int64-atomics pass ----------===//
//
// An atomic on a 64-bit integer needs the Int64Atomics capability, which
// upstream's spirv-update-vce does not deduce (it sees Int64 from the
// type), so spirv-val and drivers reject the module. kiln emits such
// atomics only where the device has shaderBufferInt64Atomics (i64
// scatter_add); this pass declares the capability in the modules that use
// them, after spirv-update-vce.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/SPIRV/Passes.h"

#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"

namespace kiln {
#define GEN_PASS_DEF_KILNSPIRVINT64ATOMICS
#include "kiln/Lowering/SPIRV/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
struct KilnSpirvInt64AtomicsPass
    : kiln::impl::KilnSpirvInt64AtomicsBase<KilnSpirvInt64AtomicsPass> {
  void runOnOperation() override {
    spirv::ModuleOp module = getOperation();
    bool used = false;
    module.walk([&](spirv::AtomicIAddOp op) { used |= op.getType().isInteger(64); });
    std::optional<spirv::VerCapExtAttr> triple = module.getVceTriple();
    if (!used || !triple)
      return;
    SmallVector<spirv::Capability> capabilities(triple->getCapabilities());
    if (llvm::is_contained(capabilities, spirv::Capability::Int64Atomics))
      return;
    capabilities.push_back(spirv::Capability::Int64Atomics);
    SmallVector<spirv::Extension> extensions(triple->getExtensions());
    module.setVceTripleAttr(spirv::VerCapExtAttr::get(triple->getVersion(), capabilities,
                                                      extensions, &getContext()));
  }
};
} // namespace
