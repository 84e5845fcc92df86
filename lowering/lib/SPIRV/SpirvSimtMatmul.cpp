//===- SpirvSimtMatmul.cpp - the kiln-spirv-simt-matmul pass --------------===//
//
// Vulkan's f32 matmuls (and f16/bf16 ones without cooperative matrices)
// on the SIMT kernel CUDA's f32 matmuls run (GPU/SimtMatmul.h), instead of
// the loop nest of one invocation per output that reads its row of A and
// column of B from global memory.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/GPU/SimtMatmul.h"
#include "kiln/Lowering/SPIRV/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace kiln {
#define GEN_PASS_DEF_KILNSPIRVSIMTMATMUL
#include "kiln/Lowering/SPIRV/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

struct KilnSpirvSimtMatmulPass : kiln::impl::KilnSpirvSimtMatmulBase<KilnSpirvSimtMatmulPass> {
  using KilnSpirvSimtMatmulBase::KilnSpirvSimtMatmulBase;

  /// Whether the kernel's K loop (one iteration per K step of at least
  /// the smallest candidate step) stays within the iterations an
  /// invocation may run.
  bool loopsWithinLimit(linalg::LinalgOp op) const {
    if (maxThreadIterations <= 0)
      return true;
    auto a = cast<MemRefType>(op.getDpsInputs()[0].getType());
    if (a.isDynamicDim(a.getRank() - 1))
      return false;
    int64_t minStep = kiln::GpuSimtMatmulTunables::candidates().front().step;
    for (const kiln::GpuSimtMatmulTunables &c : kiln::GpuSimtMatmulTunables::candidates())
      minStep = std::min(minStep, c.step);
    return llvm::divideCeil(a.getShape().back(), minStep) < maxThreadIterations;
  }

  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> matmuls;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (kiln::fitsSimtMatmul(op) && loopsWithinLimit(op))
        matmuls.push_back(op);
    });
    kiln::SimtMatmulTarget target{.fillBlocks = fillBlocks,
                                  .workgroupVectors = kiln::WorkgroupVectors::ByLane,
                                  .maxWorkgroupBytes = maxWorkgroupBytes,
                                  .maxInvocations = maxInvocations};
    for (linalg::LinalgOp op : matmuls) {
      Value c = op.getDpsInits()[0];
      kiln::MatmulFusion fused{kiln::zeroFillBefore(op, c), kiln::findMatmulEpilogue(op, c)};
      if (failed(kiln::buildSimtMatmuls(op, fused, Value(), target)))
        return signalPassFailure();
      kiln::eraseReplacedMatmul(op, fused.zeroFill, fused.epilogue);
    }
  }
};

} // namespace
