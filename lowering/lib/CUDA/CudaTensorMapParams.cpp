//===- CudaTensorMapParams.cpp - the kiln-cuda-tensor-map-params pass ------===//
//
// A tensor map reaches a kernel as a host value of type !llvm.ptr (its
// plan argument is encoded by the runtime at launch, GpuPlanExtraction);
// the kernel must take the 128-byte map itself, by value, and give TMA its
// generic address. NVPTX does that for a byval pointer parameter marked
// nvvm.grid_constant (cvta.param), which gpu.func cannot carry: the marks
// go on the lowered llvm.func, found by what reads the parameter.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/CUDA/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace kiln {
#define GEN_PASS_DEF_KILNCUDATENSORMAPPARAMS
#include "kiln/Lowering/CUDA/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// Whether `use` reads a tensor map: a TMA load's descriptor operand.
bool readsTensorMap(OpOperand &use) {
  auto copy = dyn_cast<NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp>(use.getOwner());
  return copy && use.get() == copy.getTmaDescriptor();
}

struct KilnCudaTensorMapParamsPass
    : kiln::impl::KilnCudaTensorMapParamsBase<KilnCudaTensorMapParamsPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    Builder b(ctx);
    StringRef gridConstant = NVVM::NVVMDialect::getGridConstantAttrName();
    auto map = LLVM::LLVMArrayType::get(b.getI8Type(), 128);
    WalkResult walk = getOperation().walk([&](LLVM::LLVMFuncOp kernel) {
      if (!kernel->hasAttr(NVVM::NVVMDialect::getKernelFuncAttrName()) || kernel.isExternal())
        return WalkResult::advance();
      for (BlockArgument arg : kernel.getArguments()) {
        if (!isa<LLVM::LLVMPointerType>(arg.getType()) || arg.use_empty())
          continue;
        bool tma = llvm::any_of(arg.getUses(), readsTensorMap);
        if (!tma)
          continue;
        if (!llvm::all_of(arg.getUses(), readsTensorMap)) {
          kernel.emitError() << "kernel parameter " << arg.getArgNumber()
                             << " is a tensor map for TMA and also read otherwise";
          return WalkResult::interrupt();
        }
        unsigned i = arg.getArgNumber();
        kernel.setArgAttr(i, LLVM::LLVMDialect::getByValAttrName(), TypeAttr::get(map));
        kernel.setArgAttr(i, LLVM::LLVMDialect::getAlignAttrName(), b.getI64IntegerAttr(64));
        kernel.setArgAttr(i, gridConstant, UnitAttr::get(ctx));
      }
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
