//===- CudaWgmmaSplitK.cpp - how the wgmma kernel fills the GPU -----------===//
//
// A matmul with few 128 x tileN tiles would leave SMs idle: its K splits
// into parts (each a tile of its own for the kernel), whose partial sums a
// second kernel adds through the epilogue, and, untuned, its tiles narrow;
// an estimate of the kernel's time chooses (fillGpuWithWgmma).
//
//===----------------------------------------------------------------------===//
#include "CudaMatmul.h"
#include "kiln/Lowering/Common/VectorUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace kiln {
namespace {

// Stages of a tiling narrowed to fill the GPU, at most: 128 x 128 tiles
// take 6 (the H200 sweep's {128, 6}), 128 x 64 tiles 8 (kiln-tune: 20%
// faster than 6 on 1024^3).
constexpr int64_t maxNarrowStages(int64_t tileN) { return tileN == 64 ? 8 : 6; }

} // namespace

CudaWgmmaMatmulTunables fillGpuWithWgmma(linalg::LinalgOp op, CudaWgmmaMatmulTunables tiling,
                                         int64_t fillBlocks, bool narrow, int64_t maxSharedBytes,
                                         int64_t elementBytes, int64_t rows) {
  auto c = cast<MemRefType>(op.getDpsInits()[0].getType());
  auto a = cast<MemRefType>(op.getDpsInputs()[0].getType());
  const bool sized = rows > 0 ? rowsOnlyAtRunTime(op) : c.hasStaticShape() && a.hasStaticShape();
  if (tiling.splitK != 0 || fillBlocks <= 0 || !sized)
    return tiling;
  const int64_t batch = c.getRank() == 3 ? c.getShape()[0] : 1;
  const int64_t m = rows > 0 ? rows : c.getShape()[c.getRank() - 2], n = c.getShape().back();
  const int64_t steps = llvm::divideCeil(a.getShape().back() * elementBytes,
                                         CudaWgmmaMatmulTunables::kStepBytes);
  // Estimated microseconds on an H100/H200 SM (one block per SM): a K step
  // of 128 x tileN outputs (the same for every type: a step is 128 bytes of
  // A's rows), a block's pipeline fill and stores, and the kernel that adds
  // the parts (a launch and more, and the partial sums written and read at
  // about 5 TB/s, mostly in L2). Fitted to kiln-tune's timings on the H200:
  // it picks the fastest candidate on the eight few-tile shapes timed
  // (docs/cuda.md).
  // 64-wide steps are bound by shared memory's bandwidth, not the math.
  auto stepTime = [](int64_t tileN) {
    return 0.06 + 0.56 * double(tileN) / 256 * (tileN == 64 ? 1.4 : 1.0);
  };
  auto blockTime = [](int64_t tileN) { return 1.0 + 0.5 * double(tileN) / 256; };
  auto estimate = [&](int64_t tileN, int64_t splits) {
    int64_t blocks = batch * llvm::divideCeil(m, 128) * llvm::divideCeil(n, tileN) * splits;
    double time = double(llvm::divideCeil(blocks, fillBlocks)) *
                  (double(llvm::divideCeil(steps, splits)) * stepTime(tileN) + blockTime(tileN));
    if (splits > 1)
      time += 3.0 + 2.0 * double(splits * batch * m * n * 4) / 5e6;
    return time;
  };
  CudaWgmmaMatmulTunables best = tiling;
  best.splitK = 1;
  double bestTime = estimate(tiling.tileN, 1);
  for (int64_t tileN : {256, 128, 64}) {
    if (tileN > tiling.tileN || (!narrow && tileN != tiling.tileN))
      continue;
    for (int64_t splits = 1; splits <= CudaWgmmaMatmulTunables::kMaxSplitK; ++splits) {
      if (partsOfSteps(steps, splits) != splits)
        continue;
      if (double time = estimate(tileN, splits); time < bestTime * 0.97) {
        best.tileN = tileN;
        best.splitK = splits;
        bestTime = time;
      }
    }
  }
  // Narrower tiles take more stages in the same shared memory.
  if (narrow && best.tileN < tiling.tileN) {
    CudaWgmmaMatmulTunables deeper = best;
    for (deeper.stages = best.stages; deeper.stages < maxNarrowStages(best.tileN);
         ++deeper.stages) {
      CudaWgmmaMatmulTunables next = deeper;
      ++next.stages;
      if (next.sharedBytes() > maxSharedBytes)
        break;
    }
    best = deeper;
  }
  return best;
}

} // namespace kiln
