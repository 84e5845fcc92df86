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

/// C (+)= the sum of the `splits` parts of `partials` ([batch * splits +
/// part] x M x N rounded up to even, f32), through the fused epilogue: one
/// thread per pair of columns, parts added in order (the same sums on every
/// run); C's rows odd unless `evenRows`.
void sumPartialsKernel(OpBuilder &b, Location loc, Value partials, int64_t splits, Value c,
                       bool evenRows, const MatmulFusion &fused, Value launchIf) {
  constexpr int64_t kThreadsPerBlock = 256;
  auto shape = cast<MemRefType>(partials.getType()).getShape();
  auto cShape = cast<MemRefType>(c.getType()).getShape();
  const int64_t m = shape[1], n = cShape.back(), rowPairs = shape[2] / 2, pairs = m * rowPairs;
  IndexBuilder x{b, loc};
  auto launch = gpu::LaunchOp::create(
      b, loc, gridWhere(b, loc, launchIf, x.c(llvm::divideCeil(pairs, kThreadsPerBlock))),
      x.c(shape[0] / splits), x.c(1), x.c(kThreadsPerBlock), x.c(1), x.c(1));
  OpBuilder kb = OpBuilder::atBlockBegin(&launch.getBody().front());
  IndexBuilder t{kb, loc};
  gpu::KernelDim3 block = launch.getBlockIds();
  Value pairIndex = t.add(t.mul(block.x, kThreadsPerBlock), launch.getThreadIds().x);
  Value batch = cast<MemRefType>(c.getType()).getRank() == 3 ? block.y : Value();
  EpilogueInvariants invariants =
      fused.epilogue ? loadEpilogueInvariants(kb, loc, fused.epilogue) : EpilogueInvariants();
  scf::IfOp::create(kb, loc, t.lt(pairIndex, pairs), [&](OpBuilder &ib, Location l) {
    IndexBuilder y{ib, l};
    Value row = y.div(pairIndex, rowPairs), col = y.mul(y.rem(pairIndex, rowPairs), 2);
    auto pairType = VectorType::get({2}, ib.getF32Type());
    IntegerAttr alignment = alignmentAttr(ib, partials, 2);
    Value sum;
    for (int64_t part = 0; part < splits; ++part) {
      Value at = y.add(y.mul(block.y, splits), part);
      Value value = vector::LoadOp::create(ib, l, pairType, partials, ValueRange{at, row, col},
                                           /*nontemporal=*/false, alignment);
      sum = sum ? arith::AddFOp::create(ib, l, sum, value).getResult() : value;
    }
    storeAccumulatorPair(ib, l, c, batch, row, col, sum, y.c(m), y.c(n), evenRows,
                         /*accumulate=*/!fused.zeroFill, fused.epilogue, invariants);
    scf::YieldOp::create(ib, l);
  });
  gpu::TerminatorOp::create(kb, loc);
}

int64_t partsOfSteps(int64_t steps, int64_t splits) {
  if (splits <= 1 || steps <= 1)
    return 1;
  return llvm::divideCeil(steps, llvm::divideCeil(steps, std::min(splits, steps)));
}

CudaWgmmaMatmulTunables fillGpuWithWgmma(linalg::LinalgOp op, CudaWgmmaMatmulTunables tiling,
                                         int64_t fillBlocks, bool narrow, int64_t maxSharedBytes,
                                         int64_t elementBytes) {
  auto c = cast<MemRefType>(op.getDpsInits()[0].getType());
  auto a = cast<MemRefType>(op.getDpsInputs()[0].getType());
  if (tiling.splitK != 0 || fillBlocks <= 0 || !c.hasStaticShape() || !a.hasStaticShape())
    return tiling;
  const int64_t batch = c.getRank() == 3 ? c.getShape()[0] : 1;
  const int64_t m = c.getShape()[c.getRank() - 2], n = c.getShape().back();
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
