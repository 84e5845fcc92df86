//===- SpirvVectorBuffers.cpp - the kiln-spirv-vector-buffers pass -------===//
#include "kiln/Lowering/SPIRV/Passes.h"

#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"

namespace kiln {
#define GEN_PASS_DEF_KILNSPIRVVECTORBUFFERS
#include "kiln/Lowering/SPIRV/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// One element access of a buffer: AccessChain(var, 0, index), and the
/// bitcast to a vector pointer that follows it, if any.
struct Access {
  spirv::AccessChainOp chain;
  spirv::BitcastOp vectorCast; // null for a scalar access
};

Value indexConstant(OpBuilder &b, Location loc, Type type, int64_t v) {
  return spirv::ConstantOp::create(b, loc, type, b.getIntegerAttr(type, v));
}

/// The vector type `cast` reinterprets its element pointer as.
VectorType castVectorType(spirv::BitcastOp vectorCast) {
  auto ptr = dyn_cast<spirv::PointerType>(vectorCast.getType());
  return ptr ? dyn_cast<VectorType>(ptr.getPointeeType()) : VectorType();
}

/// Whether every load and store through `vectorCast` is aligned to the
/// whole vector (kiln-vectorize marks the accesses it proved aligned).
bool alignedToVector(spirv::BitcastOp vectorCast) {
  VectorType vector = castVectorType(vectorCast);
  uint64_t bytes = vector.getNumElements() * vector.getElementTypeBitWidth() / 8;
  return llvm::all_of(vectorCast->getUsers(), [&](Operation *user) {
    std::optional<uint32_t> alignment;
    if (auto load = dyn_cast<spirv::LoadOp>(user))
      alignment = load.getAlignment();
    else if (auto store = dyn_cast<spirv::StoreOp>(user))
      alignment = store.getAlignment();
    return alignment && *alignment % bytes == 0;
  });
}

/// Every access of `var` through its addressof ops; nullopt when some use
/// is not a recognised element access.
std::optional<SmallVector<Access>> accessesOf(spirv::ModuleOp module,
                                              spirv::GlobalVariableOp var) {
  SmallVector<Access> accesses;
  bool understood = true;
  module.walk([&](spirv::AddressOfOp address) {
    if (address.getVariable() != var.getSymName())
      return;
    for (Operation *user : address->getUsers()) {
      auto chain = dyn_cast<spirv::AccessChainOp>(user);
      if (!chain || chain.getIndices().size() != 2) {
        understood = false;
        continue;
      }
      for (Operation *chainUser : chain->getUsers()) {
        // A scatter-add's atomic (kiln-gpu-scatter-adds) is a scalar access.
        if (isa<spirv::LoadOp, spirv::StoreOp, spirv::AtomicIAddOp, spirv::EXTAtomicFAddOp>(
                chainUser))
          accesses.push_back({chain, nullptr});
        else if (auto cast = dyn_cast<spirv::BitcastOp>(chainUser);
                 cast && castVectorType(cast) &&
                 llvm::all_of(cast->getUsers(), [](Operation *op) {
                   return isa<spirv::LoadOp, spirv::StoreOp>(op);
                 }))
          accesses.push_back({chain, cast});
        else
          understood = false;
      }
    }
  });
  if (!understood)
    return std::nullopt;
  return accesses;
}

/// Rewrites vector accesses through `vectorCast` as one scalar access per
/// lane.
void scalarize(spirv::AccessChainOp chain, spirv::BitcastOp vectorCast) {
  VectorType vector = castVectorType(vectorCast);
  Value index = chain.getIndices()[1];
  for (Operation *user : llvm::make_early_inc_range(vectorCast->getUsers())) {
    OpBuilder b(user);
    Location loc = user->getLoc();
    auto lanePointer = [&](int64_t lane) -> Value {
      Value at = spirv::IAddOp::create(
          b, loc, index, indexConstant(b, loc, index.getType(), lane));
      return spirv::AccessChainOp::create(
          b, loc, chain.getBasePtr(), ValueRange{chain.getIndices()[0], at});
    };
    if (auto load = dyn_cast<spirv::LoadOp>(user)) {
      SmallVector<Value> lanes;
      for (int64_t l = 0; l < vector.getNumElements(); ++l)
        lanes.push_back(spirv::LoadOp::create(b, loc, lanePointer(l)));
      load.replaceAllUsesWith(
          spirv::CompositeConstructOp::create(b, loc, vector, lanes).getResult());
      load.erase();
      continue;
    }
    auto store = cast<spirv::StoreOp>(user);
    for (int64_t l = 0; l < vector.getNumElements(); ++l) {
      Value lane = spirv::CompositeExtractOp::create(
          b, loc, store.getValue(), ArrayRef<int32_t>{static_cast<int32_t>(l)});
      spirv::StoreOp::create(b, loc, lanePointer(l), lane);
    }
    store.erase();
  }
  vectorCast.erase();
}

struct KilnSpirvVectorBuffersPass
    : kiln::impl::KilnSpirvVectorBuffersBase<KilnSpirvVectorBuffersPass> {
  void runOnOperation() override {
    spirv::ModuleOp module = getOperation();
    for (auto var : module.getOps<spirv::GlobalVariableOp>())
      if (failed(rewrite(module, var)))
        return signalPassFailure();
  }

  LogicalResult rewrite(spirv::ModuleOp module, spirv::GlobalVariableOp var) {
    auto ptr = dyn_cast<spirv::PointerType>(var.getType());
    if (!ptr || ptr.getStorageClass() != spirv::StorageClass::StorageBuffer)
      return success();
    auto block = dyn_cast<spirv::StructType>(ptr.getPointeeType());
    if (!block || block.getNumElements() != 1)
      return success();
    // A static buffer is an array, one of `?` sizes a runtime array.
    Type arrayType = block.getElementType(0);
    auto array = dyn_cast<spirv::ArrayType>(arrayType);
    auto runtimeArray = dyn_cast<spirv::RuntimeArrayType>(arrayType);
    if (!array && !runtimeArray)
      return success();
    std::optional<SmallVector<Access>> accesses = accessesOf(module, var);
    if (!accesses)
      return var.emitError("kiln-spirv-vector-buffers: unrecognised access");
    VectorType vector;
    bool uniform = true;
    for (const Access &a : *accesses) {
      VectorType v = a.vectorCast ? castVectorType(a.vectorCast) : VectorType();
      if (!v || (vector && v != vector) || !alignedToVector(a.vectorCast))
        uniform = false;
      vector = vector ? vector : v;
    }
    if (!vector)
      return success(); // scalars only: nothing to do
    if (!uniform) {
      for (Access &a : *accesses)
        if (a.vectorCast)
          scalarize(a.chain, a.vectorCast);
      return success();
    }
    int64_t lanes = vector.getNumElements();
    unsigned stride = array ? array.getArrayStride() : runtimeArray.getArrayStride();
    unsigned elementBytes = stride ? stride : vector.getElementTypeBitWidth() / 8;
    Type vectorArray =
        array ? Type(spirv::ArrayType::get(vector, (array.getNumElements() + lanes - 1) / lanes,
                                           elementBytes * lanes))
              : Type(spirv::RuntimeArrayType::get(vector, elementBytes * lanes));
    auto offset = static_cast<spirv::StructType::OffsetInfo>(
        block.hasOffset() ? block.getMemberOffset(0) : 0);
    auto vectorBlock = spirv::StructType::get({vectorArray}, {offset});
    auto vectorPtr = spirv::PointerType::get(vectorBlock, ptr.getStorageClass());
    var.setTypeAttr(TypeAttr::get(vectorPtr));
    module.walk([&](spirv::AddressOfOp address) {
      if (address.getVariable() == var.getSymName())
        address.getPointer().setType(vectorPtr);
    });
    for (Access &a : *accesses) {
      OpBuilder b(a.vectorCast);
      Location loc = a.vectorCast.getLoc();
      Value index = a.chain.getIndices()[1];
      Value shift = indexConstant(b, loc, index.getType(), llvm::Log2_64(lanes));
      Value vectorIndex = spirv::ShiftRightLogicalOp::create(b, loc, index, shift);
      Value element = spirv::AccessChainOp::create(
          b, loc, a.chain.getBasePtr(), ValueRange{a.chain.getIndices()[0], vectorIndex});
      a.vectorCast.replaceAllUsesWith(element);
      a.vectorCast.erase();
    }
    llvm::SetVector<Operation *> chains;
    for (Access &a : *accesses)
      chains.insert(a.chain);
    for (Operation *chain : chains)
      if (chain->use_empty())
        chain->erase();
    return success();
  }
};

} // namespace
