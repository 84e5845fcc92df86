//===- SpirvPushConstants.cpp - the kiln-spirv-push-constants pass -------===//
//
// spirv-lower-abi-attrs gives every scalar kernel parameter a storage buffer
// of its own (a struct of one scalar, bound after the buffers); kiln passes
// scalars, the run-time sizes of programs with `?` dims, as push constants
// instead: no buffer to allocate and write per launch. All of an entry
// point's scalars are one block (Vulkan allows one).
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/SPIRV/Passes.h"

#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVTypes.h"

namespace kiln {
#define GEN_PASS_DEF_KILNSPIRVPUSHCONSTANTS
#include "kiln/Lowering/SPIRV/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// The scalar a parameter's storage-buffer variable holds, if it is one.
Type scalarParameter(spirv::GlobalVariableOp var) {
  auto pointer = dyn_cast<spirv::PointerType>(var.getType());
  if (!pointer || pointer.getStorageClass() != spirv::StorageClass::StorageBuffer)
    return {};
  auto block = dyn_cast<spirv::StructType>(pointer.getPointeeType());
  if (!block || block.getNumElements() != 1 || !block.getElementType(0).isIntOrFloat())
    return {};
  return block.getElementType(0);
}

struct KilnSpirvPushConstantsPass
    : kiln::impl::KilnSpirvPushConstantsBase<KilnSpirvPushConstantsPass> {
  void runOnOperation() override {
    spirv::ModuleOp module = getOperation();
    SmallVector<spirv::GlobalVariableOp> scalars;
    for (auto var : module.getOps<spirv::GlobalVariableOp>())
      if (scalarParameter(var))
        scalars.push_back(var);
    if (scalars.empty())
      return;
    // The parameters' order is their bindings' (lower-abi-attrs binds
    // parameter i at binding i).
    llvm::sort(scalars, [](spirv::GlobalVariableOp a, spirv::GlobalVariableOp b) {
      return a.getBinding().value_or(0) < b.getBinding().value_or(0);
    });
    SmallVector<Type> members;
    SmallVector<spirv::StructType::OffsetInfo> offsets;
    uint32_t offset = 0;
    for (spirv::GlobalVariableOp var : scalars) {
      Type type = scalarParameter(var);
      uint32_t bytes = std::max(1u, type.getIntOrFloatBitWidth() / 8);
      offset = (offset + bytes - 1) / bytes * bytes;
      members.push_back(type);
      offsets.push_back(offset);
      offset += bytes;
    }
    auto blockType = spirv::PointerType::get(spirv::StructType::get(members, offsets),
                                             spirv::StorageClass::PushConstant);
    OpBuilder b(scalars.front());
    auto block = spirv::GlobalVariableOp::create(b, scalars.front().getLoc(), blockType,
                                                 "__kiln_push_constants", nullptr);
    // Symbol names are uniqued in the context: they outlive the variables.
    llvm::SmallDenseSet<StringRef> removed;
    for (spirv::GlobalVariableOp var : scalars)
      removed.insert(var.getSymName());
    for (auto [member, var] : llvm::enumerate(scalars)) {
      // Each use is addressof -> access chain [0] -> load.
      SmallVector<spirv::AddressOfOp> addresses;
      module.walk([&](spirv::AddressOfOp a) {
        if (a.getVariable() == var.getSymName())
          addresses.push_back(a);
      });
      for (spirv::AddressOfOp address : addresses) {
        OpBuilder at(address);
        Value base = spirv::AddressOfOp::create(at, address.getLoc(), block);
        Value index = spirv::ConstantOp::create(at, address.getLoc(), at.getI32Type(),
                                                at.getI32IntegerAttr(member));
        for (Operation *user : llvm::make_early_inc_range(address->getUsers())) {
          auto chain = dyn_cast<spirv::AccessChainOp>(user);
          if (!chain || chain.getIndices().size() != 1) {
            user->emitError("kiln-spirv-push-constants: a scalar parameter used other "
                            "than through an access chain to its value");
            return signalPassFailure();
          }
          OpBuilder atChain(chain);
          Value moved = spirv::AccessChainOp::create(atChain, chain.getLoc(), base,
                                                     ValueRange{index});
          chain.replaceAllUsesWith(moved);
          chain.erase();
        }
        address.erase();
      }
      var.erase();
    }
    // From SPIR-V 1.4 an entry point's interface lists every global it
    // uses: the scalars' variables (named in `removed`) leave it, the block
    // takes their place.
    for (auto entry : module.getOps<spirv::EntryPointOp>()) {
      SmallVector<Attribute> interface;
      bool listed = false;
      for (Attribute symbol : entry.getInterface()) {
        bool scalar = removed.contains(cast<FlatSymbolRefAttr>(symbol).getValue());
        listed |= scalar;
        if (!scalar)
          interface.push_back(symbol);
      }
      if (!listed)
        continue;
      interface.push_back(FlatSymbolRefAttr::get(block.getSymNameAttr()));
      entry.setInterfaceAttr(ArrayAttr::get(module.getContext(), interface));
    }
  }
};

} // namespace
