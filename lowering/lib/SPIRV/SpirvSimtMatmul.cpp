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

#include <algorithm>

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
  /// invocation may run, and its grid within `maxGrid` on any candidate.
  bool withinLimits(linalg::LinalgOp op) const {
    auto a = cast<MemRefType>(op.getDpsInputs()[0].getType());
    auto c = cast<MemRefType>(op.getDpsInits()[0].getType());
    int64_t minStep = kiln::GpuSimtMatmulTunables::candidates().front().step;
    int64_t minTile = kiln::GpuSimtMatmulTunables::candidates().front().tile;
    for (const kiln::GpuSimtMatmulTunables &t : kiln::GpuSimtMatmulTunables::candidates()) {
      minStep = std::min(minStep, t.step);
      minTile = std::min(minTile, t.tile);
    }
    if (maxThreadIterations > 0 &&
        (a.isDynamicDim(a.getRank() - 1) ||
         llvm::divideCeilSigned(a.getShape().back(), minStep) >= maxThreadIterations))
      return false;
    auto shape = c.getShape();
    int64_t rank = c.getRank();
    auto fits = [&](int64_t size, int64_t per, int64_t dim) {
      int64_t limit = dim < static_cast<int64_t>(maxGrid.size()) ? maxGrid[dim] : 65535;
      return ShapedType::isDynamic(size) || llvm::divideCeilSigned(size, per) <= limit;
    };
    int64_t batchGrid = rank == 2 || ShapedType::isDynamic(shape[0])
                            ? shape[0]
                            : shape[0] * kiln::GpuSimtMatmulTunables::kMaxSplitK;
    return fits(shape[rank - 1], minTile, 0) && fits(shape[rank - 2], minTile, 1) &&
           (rank == 2 || fits(batchGrid, 1, 2));
  }

  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> matmuls;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (kiln::fitsSimtMatmul(op) && withinLimits(op))
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
