//===- CudaReductionOccupancy.cpp - the kiln-cuda-reduction-occupancy pass ===//
//
// Kernels that reduce across their block stream rows through registers;
// with 80-96 registers (the driver JIT's choice for a softmax or a `?`
// layer_norm) only 2-3 blocks of 256 threads fit an SM and memory latency
// shows. Asking for 1024 resident threads caps them at 64 registers, which
// plain softmax and norm kernels fit without spilling once no call (IEEE
// division's slow path) forces values into callee-saved registers; fused
// ones that spill a few bytes under the cap measured faster all the same.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/CUDA/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace kiln {
#define GEN_PASS_DEF_KILNCUDAREDUCTIONOCCUPANCY
#include "kiln/Lowering/CUDA/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// Threads per SM the hint asks for: half of an SM's 2048, so 64 registers.
constexpr int64_t kResidentThreads = 1024;

bool reducesAcrossBlock(gpu::GPUFuncOp kernel) {
  return kernel.walk([](gpu::AllReduceOp) { return WalkResult::interrupt(); }).wasInterrupted();
}

bool usesF64(gpu::GPUFuncOp kernel) {
  auto isF64 = [](Type t) { return getElementTypeOrSelf(t).isF64(); };
  return kernel
      .walk([&](Operation *op) {
        return llvm::any_of(op->getResultTypes(), isF64) ? WalkResult::interrupt()
                                                         : WalkResult::advance();
      })
      .wasInterrupted();
}

struct KilnCudaReductionOccupancyPass
    : kiln::impl::KilnCudaReductionOccupancyBase<KilnCudaReductionOccupancyPass> {
  void runOnOperation() override {
    for (auto kernel : getOperation().getOps<gpu::GPUFuncOp>()) {
      std::optional<ArrayRef<int32_t>> size = kernel.getKnownBlockSize();
      if (!kernel.isKernel() || !size || !reducesAcrossBlock(kernel))
        continue;
      int64_t threads = int64_t((*size)[0]) * (*size)[1] * (*size)[2];
      if (threads > kResidentThreads / 2 || kResidentThreads % threads || usesF64(kernel))
        continue;
      kernel->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                      IntegerAttr::get(IntegerType::get(&getContext(), 32),
                                       kResidentThreads / threads));
    }
  }
};

} // namespace
