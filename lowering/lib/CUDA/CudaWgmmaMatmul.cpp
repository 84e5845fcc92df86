//===- CudaWgmmaMatmul.cpp - the Hopper (sm_90a) matmul kernel ------------===//
//
// f16/bf16 (f32 as tf32, and f8 read from the buffers their decodes read:
// CudaFloat8Operands.cpp) matmuls with f32 accumulation on warpgroup MMA,
// fed by TMA. A block of three warpgroups computes 128 x tileN output
// tiles, one after the other (persistent: at most a block per SM, each
// taking tiles a grid apart; the K step count runs on across them):
// warpgroup 0 is the producer, whose one thread issues the TMA copies of
// each K step (128 bytes of A's row: 64 16-bit elements, 32 tf32, 128 f8)
// into `stages` shared-memory buffers, the next tile's while the consumers
// store the last one's; warpgroups 1 and 2 are the consumers, each 64 x
// tileN outputs held in registers as one wgmma accumulator, read by wgmma
// straight from shared memory through matrix descriptors (no thread loads
// fragments). setmaxnreg moves registers from the producer to the
// consumers. Few tiles over a long K split K into parts, each tile's part
// a tile of its own, whose partial sums a second kernel adds
// (fillGpuWithWgmma chooses); a K that is no whole 16-byte units is read
// from zero-padded copies (paddedWgmmaOperands).
//
// Each stage has two mbarriers: `full`, which the producer arms with the
// stage's bytes (expect_tx) and TMA completes, and `empty`, on which every
// consumer warp arrives once the wgmma that read the stage is done; the
// producer waits on `empty` before refilling it, consumers on `full`
// before reading it (phase parity = round of the ring). One step's wgmma
// group stays in flight while the next is issued.
//
// Both operands use the 128-byte swizzle, which TMA writes and wgmma reads
// (16-byte chunk c of a 128-byte row r at chunk c ^ (r % 8)): A as 128
// rows of a K step (128 bytes: 64 16-bit K, 32 tf32, 128 f8; K-major, one
// box), B as tileN/64 blocks of 64 K rows x 64 columns (N-major, which
// wgmma transposes; one box each). wgmma transposes 16-bit operands only: a
// tf32 or f8 matmul first copies B transposed (copyMatrix) and reads it
// K-major as A, tileN rows of a K step (one box); a B that a copy wrote
// transposed from an N x K buffer (x @ W^T) is read from that buffer
// K-major, for every type, and the copy goes. TMA zero-fills
// what lies outside the matrices (the M, N and K edges); the store masks
// the edges and runs an elementwise consumer of C (bias, activation) as
// the mma.sync kernel does, from the same fragment layout. The tensor maps
// are host values (nvgpu.tma.create.descriptor, as !llvm.ptr) that the
// runtime encodes per launch (GpuPlanExtraction, kiln-cuda-tensor-map-params).
//
//===----------------------------------------------------------------------===//
#include "CudaMatmul.h"
#include "CudaWgmma.h"
#include "kiln/Lowering/Common/MatmulEpilogue.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace kiln {
namespace {

constexpr int64_t kTileM = 128, kWarpgroupM = 64, kWarpgroup = 128;
constexpr int64_t kThreads = 3 * kWarpgroup; // producer + two consumers
constexpr int64_t kConsumerWarps = 8;
constexpr int64_t kRowBytes = CudaWgmmaMatmulTunables::kStepBytes; // a swizzled row
constexpr int64_t kBlockN = 64; // columns of an N-major B in one swizzled block (one box)
constexpr int64_t kMmaKBytes = 32; // K of one wgmma: 16 16-bit elements, 8 tf32, 32 f8
// Registers per thread after setmaxnreg: 128 x 40 + 256 x 232 <= 64 Ki.
constexpr uint32_t kProducerRegisters = 40, kConsumerRegisters = 232;

struct Problem {
  Value aMap, bMap, c;
  bool aBatched, bBatched; // whether A, B have a batch dim
  Value m, n, steps;       // host index values: constants or run-time sizes
  int64_t tileN;
  int64_t bytes; // per element of A and B
  /// Whether B is read K-major (a transposed copy, or a buffer holding B
  /// transposed), as tf32 and f8 must be; else N-major.
  bool kMajorB;
  /// Whether each step's products are summed apart and then added to the
  /// accumulator by the consumer (f8: the tensor cores keep about 14 bits
  /// of an f8 wgmma's sums, far fewer than f32's 24).
  bool promote;
  int64_t stepK() const { return kRowBytes / bytes; }
  int64_t mmaK() const { return kMmaKBytes / bytes; }
};

/// What a block computes of one output tile: 128 x tileN outputs from
/// (row0, col0) of batch `batch` (null: not batched), over `stepCount` K
/// steps from `firstStep` on (its part of K under split-K, else all), its
/// sums stored at `partials` (split-K: the partial sums' first index,
/// batch * splits + part; else null).
struct Tile {
  Value row0, col0, batch, firstStep, stepCount, partials;
};

/// A block's shared-memory pipeline: `stages` buffers of A's and B's K
/// steps from aStart and bStart on, and their `full` and `empty` mbarriers
/// (8 bytes each) from fullStart and emptyStart on (byte addresses).
struct Pipeline {
  int64_t stages;
  int64_t aStageBytes, bStageBytes; // one buffer of A's K step, of B's
  Value aStart, bStart, fullStart, emptyStart;
  Value full(IndexBuilder &x, Value stage) const { return x.add(fullStart, x.mul(stage, 8)); }
  Value empty(IndexBuilder &x, Value stage) const { return x.add(emptyStart, x.mul(stage, 8)); }
};

/// A consumer warpgroup's constants: which one it is (0 or 1), whether a
/// thread is its warp's lane 0, its wgmma descriptors of stage 0 at K 0
/// (a stage and a K offset add their address / 16), the operand types.
struct Consumer {
  Value warpgroup, firstLane, aDescriptor, bDescriptor;
  NVVM::WGMMATypes typeA, typeB;
};

/// The producer thread's loop over a tile's K steps, the block's steps
/// `done` before them: per step, wait until the consumers freed the stage,
/// arm its `full` barrier with the stage's bytes and issue the TMA copies
/// of A's 128 x stepK box and B's tileN/64 stepK x 64 boxes (K-major B: one
/// tileN x stepK box).
void produce(OpBuilder &b, Location loc, const Problem &p, const Pipeline &pipe,
             const Tile &tile, Value done) {
  const int64_t stages = pipe.stages, aStageBytes = pipe.aStageBytes,
                bStageBytes = pipe.bStageBytes;
  IndexBuilder ib{b, loc};
  auto loop = scf::ForOp::create(b, loc, ib.c(0), tile.stepCount, ib.c(1));
  OpBuilder lb = OpBuilder::atBlockBegin(loop.getBody());
  IndexBuilder x{lb, loc};
  Value step = loop.getInductionVar(), blockStep = x.add(done, step);
  Value stage = x.rem(blockStep, stages), round = x.div(blockStep, stages);
  // A fresh barrier's "previous phase" (parity 1) counts as complete, so
  // the first round does not wait.
  Value parity = x.xorI(x.rem(round, 2), x.c(1));
  waitBarrier(lb, loc, pipe.empty(x, stage), parity);
  Value full = sharedPointer(lb, loc, pipe.full(x, stage));
  NVVM::MBarrierArriveExpectTxOp::create(lb, loc, Type(), full,
                                         i32(lb, loc, aStageBytes + bStageBytes),
                                         NVVM::MemScopeKind::CTA, false, Value());
  auto load = [&](Value map, bool batched, Value at, Value col, Value row) {
    SmallVector<Value> coordinates = {col, row};
    if (batched)
      coordinates.push_back(tile.batch);
    tmaLoad(lb, loc, map, coordinates, at, full);
  };
  Value k0 = x.mul(x.add(tile.firstStep, step), p.stepK());
  load(p.aMap, p.aBatched, x.add(pipe.aStart, x.mul(stage, aStageBytes)), k0, tile.row0);
  if (p.kMajorB) {
    load(p.bMap, p.bBatched, x.add(pipe.bStart, x.mul(stage, bStageBytes)), k0, tile.col0);
    return;
  }
  for (int64_t j = 0; j < p.tileN / kBlockN; ++j)
    load(p.bMap, p.bBatched,
         x.add(pipe.bStart, x.add(x.mul(stage, bStageBytes), j * kBlockN * kRowBytes)),
         x.add(tile.col0, j * kBlockN), k0);
}

/// A consumer warpgroup's loop over a tile's K steps, the block's steps
/// `done` before them: per step, wait for its stage to be `full`, issue
/// its wgmma chain on the stage's descriptors, and give the stage of the
/// step before (whose group is then done) back to the producer; one group
/// stays in flight. Returns the 64 x tileN accumulator once every group is
/// done and every stage given back.
Value multiplyTile(OpBuilder &b, Location loc, const Problem &p, const Pipeline &pipe,
                   const Consumer &consumer, const Tile &tile, Value done) {
  const int64_t stages = pipe.stages, tileN = p.tileN, stepK = p.stepK(), mmaK = p.mmaK();
  const int64_t aStageBytes = pipe.aStageBytes, bStageBytes = pipe.bStageBytes;
  IndexBuilder ib{b, loc};
  auto accType = LLVM::LLVMStructType::getLiteral(
      b.getContext(), SmallVector<Type>(kWarpgroupM * tileN / kWarpgroup, b.getF32Type()));
  // One arrival per warp gives stage `stage` back to the producer.
  auto release = [&](OpBuilder &rb, Value when, Value stage) {
    scf::IfOp::create(rb, loc, when, [&](OpBuilder &tb, Location tl) {
      IndexBuilder t{tb, tl};
      NVVM::MBarrierArriveOp::create(tb, tl, Type(), sharedPointer(tb, tl, pipe.empty(t, stage)),
                                     Value());
      scf::YieldOp::create(tb, tl);
    });
  };
  auto loop = scf::ForOp::create(
      b, loc, ib.c(0), tile.stepCount, ib.c(1),
      ValueRange{LLVM::ZeroOp::create(b, loc, accType)},
      [&](OpBuilder &lb, Location l, Value step, ValueRange acc) {
        IndexBuilder x{lb, l};
        Value blockStep = x.add(done, step);
        Value stage = x.rem(blockStep, stages);
        waitBarrier(lb, l, pipe.full(x, stage), x.rem(x.div(blockStep, stages), 2));
        Value stage64 = toI64(lb, l, stage);
        auto offset = [&](Value d, int64_t stageBytes, int64_t bytes) {
          Value stride = arith::ConstantIntOp::create(lb, l, stageBytes / 16, 64);
          Value at = arith::AddIOp::create(
              lb, l, arith::MulIOp::create(lb, l, stage64, stride),
              arith::ConstantIntOp::create(lb, l, bytes / 16, 64));
          return arith::AddIOp::create(lb, l, d, at).getResult();
        };
        // The wgmma chain of this step, from `sum` (or from zero: scale-d 0).
        auto multiply = [&](Value sum, bool fromZero) {
          NVVM::WgmmaFenceAlignedOp::create(lb, l);
          for (int64_t kk = 0; kk < stepK / mmaK; ++kk) {
            // One wgmma's K: 32 bytes along a K-major swizzled row (A, a
            // K-major B), mmaK rows of an N-major B.
            Value aAt = offset(consumer.aDescriptor, aStageBytes, kk * kMmaKBytes);
            Value bAt = offset(consumer.bDescriptor, bStageBytes,
                               p.kMajorB ? kk * kMmaKBytes : kk * mmaK * kRowBytes);
            sum = NVVM::WgmmaMmaAsyncOp::create(
                lb, l, accType, sum, aAt, bAt,
                NVVM::MMAShapeAttr::get(lb.getContext(), 64, tileN, mmaK), consumer.typeA,
                consumer.typeB, NVVM::WGMMATypes::f32,
                fromZero && kk == 0 ? NVVM::WGMMAScaleOut::zero : NVVM::WGMMAScaleOut::one,
                NVVM::WGMMAScaleIn::one, NVVM::WGMMAScaleIn::one,
                NVVM::MMALayout::row, // A K-major
                // B K-major (col), or N-major (row): transposed by wgmma.
                p.kMajorB ? NVVM::MMALayout::col : NVVM::MMALayout::row,
                /*satfinite=*/nullptr);
          }
          NVVM::WgmmaGroupSyncAlignedOp::create(lb, l);
          return sum;
        };
        Value sum = acc[0];
        if (!p.promote) {
          sum = multiply(sum, false);
          // The previous step's group is done: its stage can be refilled.
          NVVM::WgmmaWaitGroupSyncOp::create(lb, l, 1);
          release(lb,
                  x.both(consumer.firstLane,
                         arith::CmpIOp::create(lb, l, arith::CmpIPredicate::ugt, step, x.c(0))),
                  x.rem(x.add(blockStep, stages - 1), stages));
        } else {
          // Promoting, the step's products are summed from zero apart and,
          // once done, added to the f32 accumulator.
          Value products = multiply(LLVM::UndefOp::create(lb, l, accType), true);
          NVVM::WgmmaWaitGroupSyncOp::create(lb, l, 0);
          release(lb, consumer.firstLane, stage);
          for (int64_t e = 0; e < kWarpgroupM * tileN / kWarpgroup; ++e) {
            Value total = arith::AddFOp::create(lb, l, LLVM::ExtractValueOp::create(lb, l, sum, e),
                                                LLVM::ExtractValueOp::create(lb, l, products, e));
            sum = LLVM::InsertValueOp::create(lb, l, sum, total, e);
          }
        }
        scf::YieldOp::create(lb, l, sum);
      });
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
  // The last step's stage goes back too (the next tile's steps reuse it).
  if (!p.promote) {
    Value last = ib.rem(ib.add(done, arith::SubIOp::create(b, loc, tile.stepCount, ib.c(1))),
                        stages);
    release(b,
            ib.both(consumer.firstLane, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt,
                                                              tile.stepCount, ib.c(0))),
            last);
  }
  return loop.getResult(0);
}

} // namespace

bool fitsWgmmaMatmul(linalg::LinalgOp op, bool tf32) {
  Type element = cast<MemRefType>(op.getDpsInputs()[0].getType()).getElementType();
  const bool halves = element.isF16() || element.isBF16();
  const int64_t bytes = element.getIntOrFloatBitWidth() / 8;
  // A 16-bit B's rows are whole 16-byte copies here (TMA's strides; a
  // run-time row length is checked at run time: wgmmaMisfitAtRunTime); a
  // tf32 B is copied (copyMatrix). conv's im2col stays on mma.sync,
  // which reads the patches in place (implicit GEMM); a B copied
  // transposed does not (TransposedOperand). What TMA reads
  // starts on 16 bytes.
  Value b = op.getDpsInputs()[1];
  int64_t bRow = cast<MemRefType>(b.getType()).getShape().back();
  auto startsAligned = [&](Value v) {
    SmallVector<int64_t> strides;
    int64_t offset;
    return succeeded(cast<MemRefType>(v.getType()).getStridesAndOffset(strides, offset)) &&
           !ShapedType::isDynamic(offset) && offset * bytes % 16 == 0;
  };
  const bool sized = llvm::all_of(op->getOperands(), [](Value v) {
    return cast<MemRefType>(v.getType()).hasStaticShape();
  });
  // A B that a kernel gathers where it is read is not one for TMA: with
  // static sizes (mma.sync, or wgmma through a K-major copy) or where the
  // K-major copy takes run-time sizes; else its copy stays and is read.
  std::optional<GatheredOperand> gathered = findGatheredOperand(op, b);
  const bool gathers = gathered && !findTransposedOperand(op, b) &&
                       (sized || fitsWgmmaMatmulWithGatheredB(op, *gathered));
  if (!(halves || (tf32 && element.isF32())) || !fitsMmaMatmul(op, tf32) || gathers ||
      !startsAligned(op.getDpsInputs()[0]))
    return false;
  // TMA takes no empty dim: a static K of 0 is the SIMT kernel's (C = 0);
  // a run-time one is checked at run time (wgmmaMisfitAtRunTime).
  if (cast<MemRefType>(op.getDpsInputs()[0].getType()).getShape().back() == 0)
    return false;
  // Static sizes store C's odd rows element by element; a B read K-major
  // (a tf32 B's transposed copy, or the N x K buffer of x @ W^T) is rows of
  // K, so N may be anything (an LM head's vocabulary of 50257).
  if (!halves) {
    int64_t cRow = cast<MemRefType>(op.getDpsInits()[0].getType()).getShape().back();
    return sized || ShapedType::isDynamic(cRow) || cRow % 2 == 0;
  }
  if (sized && findTransposedOperand(op, b))
    return true;
  return (ShapedType::isDynamic(bRow) || bRow % 8 == 0) && startsAligned(b);
}

bool fitsFloat8WgmmaMatmul(linalg::LinalgOp op) {
  // Static sizes (the decodes are erased: nothing would be left to run
  // where a run-time size misfit); A's rows whole 16-byte units (TMA's
  // strides), C's even (the accumulator's pairs).
  auto a = cast<MemRefType>(op.getDpsInputs()[0].getType());
  auto c = cast<MemRefType>(op.getDpsInits()[0].getType());
  int64_t k = a.getShape().back();
  return a.hasStaticShape() && c.hasStaticShape() && c.getLayout().isIdentity() && k > 0 &&
         k % 16 == 0 && c.getShape().back() % 2 == 0;
}

Value wgmmaMisfitAtRunTime(OpBuilder &b, Location loc, linalg::LinalgOp op) {
  IndexBuilder x{b, loc};
  Value a = op.getDpsInputs()[0], bm = op.getDpsInputs()[1];
  Value k = b.createOrFold<memref::DimOp>(loc, a, cast<MemRefType>(a.getType()).getRank() - 1);
  Value n = b.createOrFold<memref::DimOp>(loc, bm, cast<MemRefType>(bm.getType()).getRank() - 1);
  // Rows of A and B whole 16-byte units (TMA's strides); no empty K (TMA
  // takes no empty dim). Index arithmetic only, as the GPU plan evaluates
  // it on the host (signed).
  // A tf32 B is a transposed copy, its rows K long; C's rows stay even (the
  // accumulator's pairs).
  const int64_t bytes = cast<MemRefType>(a.getType()).getElementTypeBitWidth() / 8;
  Value rest = b.createOrFold<arith::AddIOp>(
      loc, b.createOrFold<arith::RemSIOp>(loc, k, x.c(16 / bytes)),
      b.createOrFold<arith::RemSIOp>(loc, n, x.c(bytes == 4 ? 2 : 8)));
  Value noK = b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::sle, k, x.c(0));
  return b.createOrFold<arith::AddIOp>(
      loc, rest, b.createOrFold<arith::SelectOp>(loc, noK, x.c(1), x.c(0)));
}

LogicalResult buildWgmmaMatmul(linalg::LinalgOp op, const CudaWgmmaMatmulTunables &tiling,
                               int64_t maxSharedBytes, int64_t fillBlocks,
                               const MatmulFusion &fused, Value launchIf,
                               const WgmmaOperands &operands) {
  std::optional<Float8Operands> f8 = operands.f8;
  Value kMajorB = operands.kMajorB;
  const int64_t tileN = tiling.tileN, stages = tiling.stages;
  if ((tileN != 64 && tileN != 128 && tileN != 256) || stages < 3)
    return op->emitError("wgmma tiling needs a tile N of 64, 128 or 256 and 3 or more "
                         "stages, got ")
           << tileN << " and " << stages;
  if (tiling.splitK < 0 || tiling.splitK > CudaWgmmaMatmulTunables::kMaxSplitK)
    return op->emitError("wgmma split-K needs 0 to ")
           << CudaWgmmaMatmulTunables::kMaxSplitK << " parts, got " << tiling.splitK;
  if (tiling.sharedBytes() > maxSharedBytes)
    return op->emitError("wgmma tiling needs ")
           << tiling.sharedBytes() << " bytes of shared memory; at most " << maxSharedBytes;

  bool batched = isa<linalg::BatchMatmulOp>(op);
  Value a = f8 ? f8->a() : operands.a ? operands.a : op.getDpsInputs()[0];
  Value bm = f8 ? f8->b() : op.getDpsInputs()[1];
  Type element = cast<MemRefType>(a.getType()).getElementType();
  const NVVM::WGMMATypes typeA = wgmmaTypeOf(f8 ? Float8Operands::typeOf(f8->decodeA) : element),
                         typeB = wgmmaTypeOf(f8 ? Float8Operands::typeOf(f8->decodeB) : element);
  // Rows of C of run-time length are even (wgmmaMisfitAtRunTime), but
  // beside a gathered B (the pixels of `?` images), which nothing checks.
  const int64_t cRow = cast<MemRefType>(op.getDpsInits()[0].getType()).getShape().back();
  const bool evenRows = ShapedType::isDynamic(cRow) ? !kMajorB : cRow % 2 == 0;
  Problem p{{}, {}, op.getDpsInits()[0],
            cast<MemRefType>(a.getType()).getRank() == 3,
            cast<MemRefType>(bm.getType()).getRank() == 3, {}, {}, {}, tileN,
            element.getIntOrFloatBitWidth() / 8, kMajorB || element.getIntOrFloatBitWidth() != 16,
            f8.has_value()};
  const int64_t stepK = p.stepK();
  linalg::FillOp zeroFill = fused.zeroFill;
  linalg::GenericOp epilogue = fused.epilogue;

  OpBuilder b(op);
  Location loc = op.getLoc();
  IndexBuilder ib{b, loc};
  MLIRContext *ctx = b.getContext();
  // The sizes on the host (constants where static), which the kernel takes
  // as parameters where they are not.
  const int64_t cRank = cast<MemRefType>(p.c.getType()).getRank();
  auto sizeOf = [&](Value v, int64_t d) { return b.createOrFold<memref::DimOp>(loc, v, d); };
  auto ceilDiv = [&](Value v, int64_t d) {
    return b.createOrFold<arith::CeilDivSIOp>(loc, v, ib.c(d));
  };
  p.m = sizeOf(p.c, cRank - 2);
  p.n = sizeOf(p.c, cRank - 1);
  p.steps = ceilDiv(sizeOf(a, cast<MemRefType>(a.getType()).getRank() - 1), stepK);
  // Static sizes (but for run-time rows: rowsOnlyAtRunTime) split K into
  // parts none of which is empty; other run-time sizes never.
  const auto cType = cast<MemRefType>(p.c.getType());
  std::optional<int64_t> staticStepCount = getConstantIntValue(p.steps);
  const int64_t splits =
      staticStepCount && (cType.hasStaticShape() || rowsOnlyAtRunTime(op))
          ? partsOfSteps(*staticStepCount, tiling.splitK)
          : 1;
  p.aMap = tensorMap(b, loc, a, kTileM, stepK);
  if (p.kMajorB && !kMajorB)
    kMajorB = copyMatrix(b, loc, bm, /*transpose=*/true, /*paddedCols=*/0, launchIf);
  p.bMap = p.kMajorB ? tensorMap(b, loc, kMajorB, tileN, stepK)
                     : tensorMap(b, loc, bm, stepK, kBlockN);
  Value numTilesM = ceilDiv(p.m, kTileM), numTilesN = ceilDiv(p.n, tileN);
  Value sharedSize = arith::ConstantIntOp::create(b, loc, tiling.sharedBytes(), 32);
  Value batches = batched ? sizeOf(p.c, 0) : ib.c(1);
  // Split-K: each block's partial sums go to a part of `partials` of their
  // own ([batch * splits + part] x M x N), which sumPartialsKernel adds.
  // Its rows are even, so that pairs of it are whole.
  Value partials = splits > 1 ? allocPartials(b, loc, p.c, splits, 2, launchIf) : Value();
  // One block per tile, or (persistent) at most `fillBlocks`, each taking
  // tiles blocks apart: its producer then loads the next tile's first
  // steps while its consumers store the last one's outputs.
  auto times = [&](Value x, Value y) { return b.createOrFold<arith::MulIOp>(loc, x, y); };
  Value tilesPerMatrix = times(numTilesM, numTilesN);
  Value tiles = times(times(batches, ib.c(splits)), tilesPerMatrix);
  Value grid = tiles;
  if (fillBlocks > 0)
    grid = b.createOrFold<arith::MinSIOp>(loc, tiles, ib.c(fillBlocks));
  auto launch = gpu::LaunchOp::create(b, loc, gridWhere(b, loc, launchIf, grid), ib.c(1),
                                      ib.c(1), ib.c(kThreads), ib.c(1), ib.c(1), sharedSize);

  b.setInsertionPointToStart(&launch.getBody().front());
  IndexBuilder kb{b, loc};
  auto workgroup = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  Value shared = gpu::DynamicSharedMemoryOp::create(
      b, loc, MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), AffineMap(), workgroup));
  // The swizzle pattern repeats every 1024 bytes and wgmma assumes it
  // starts there: the stages begin at the first such boundary; the
  // barriers follow them.
  constexpr int64_t kAlign = CudaWgmmaMatmulTunables::kAlignment;
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, shared);
  Pipeline pipe;
  pipe.stages = stages;
  pipe.aStageBytes = kTileM * kRowBytes;
  pipe.bStageBytes = tileN * kRowBytes;
  pipe.aStart = kb.add(base, kb.rem(arith::SubIOp::create(b, loc, kb.c(kAlign),
                                                          kb.rem(base, kAlign)),
                                    kAlign));
  pipe.bStart = kb.add(pipe.aStart, stages * pipe.aStageBytes);
  pipe.fullStart = kb.add(pipe.bStart, stages * pipe.bStageBytes);
  pipe.emptyStart = kb.add(pipe.fullStart, stages * 8);
  Value tid = launch.getThreadIds().x;
  Value warpgroup = kb.div(tid, kWarpgroup), lane = kb.rem(tid, 32);
  Value warp = kb.rem(kb.div(tid, 32), 4);

  // Tile `t` in the grouped order, batch by batch and part by part.
  auto tileOf = [&](OpBuilder &tb, Value t) {
    IndexBuilder x{tb, loc};
    Tile tile;
    Value z = x.div(t, tilesPerMatrix);
    auto [tileRow, tileCol] = groupedTileOrder(
        x, arith::RemUIOp::create(tb, loc, t, tilesPerMatrix), numTilesM, numTilesN);
    tile.row0 = x.mul(tileRow, kTileM);
    tile.col0 = x.mul(tileCol, tileN);
    tile.batch = !batched ? Value() : splits > 1 ? x.div(z, splits) : z;
    if (splits > 1) {
      // Every part gets at least one step (partsOfSteps).
      int64_t steps = *staticStepCount, perPart = llvm::divideCeil(steps, splits);
      tile.partials = z;
      tile.firstStep = x.mul(x.rem(z, splits), perPart);
      tile.stepCount = arith::MinUIOp::create(
          tb, loc, x.c(perPart), arith::SubIOp::create(tb, loc, x.c(steps), tile.firstStep));
    } else {
      tile.firstStep = x.c(0);
      tile.stepCount = p.steps;
    }
    return tile;
  };
  // A loop over the block's tiles carrying the K steps done before each.
  auto forEachTile = [&](OpBuilder &fb, function_ref<void(OpBuilder &, const Tile &, Value)> body) {
    IndexBuilder x{fb, loc};
    gpu::KernelDim3 blocks = launch.getBlockIds(), gridSize = launch.getGridSize();
    scf::ForOp::create(fb, loc, blocks.x, tiles, gridSize.x, ValueRange{x.c(0)},
                       [&](OpBuilder &lb, Location l, Value t, ValueRange done) {
                         Tile tile = tileOf(lb, t);
                         body(lb, tile, done[0]);
                         scf::YieldOp::create(lb, l, IndexBuilder{lb, l}.add(done[0],
                                                                             tile.stepCount));
                       });
  };

  // Thread 0 sets up the barriers: `full` completes on the producer's
  // arrival and the TMA bytes, `empty` on every consumer warp's.
  Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid, kb.c(0));
  scf::IfOp::create(b, loc, first, [&](OpBuilder &tb, Location l) {
    IndexBuilder x{tb, l};
    for (int64_t s = 0; s < stages; ++s) {
      NVVM::MBarrierInitOp::create(tb, l, sharedPointer(tb, l, x.add(pipe.fullStart, s * 8)),
                                   i32(tb, l, 1), Value());
      NVVM::MBarrierInitOp::create(tb, l, sharedPointer(tb, l, x.add(pipe.emptyStart, s * 8)),
                                   i32(tb, l, kConsumerWarps), Value());
    }
    NVVM::FenceMbarrierInitOp::create(tb, l);
    scf::YieldOp::create(tb, l);
  });
  gpu::BarrierOp::create(b, loc);

  Value isProducer = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, warpgroup, kb.c(0));
  auto roles = scf::IfOp::create(b, loc, isProducer, /*withElseRegion=*/true);
  {
    OpBuilder pb = roles.getThenBodyBuilder();
    NVVM::SetMaxRegisterOp::create(pb, loc, kProducerRegisters,
                                   NVVM::SetMaxRegisterAction::decrease);
    Value issuer =
        arith::CmpIOp::create(pb, loc, arith::CmpIPredicate::eq, tid, IndexBuilder{pb, loc}.c(0));
    scf::IfOp::create(pb, loc, issuer, [&](OpBuilder &tb, Location l) {
      forEachTile(tb, [&](OpBuilder &lb, const Tile &tile, Value done) {
        produce(lb, l, p, pipe, tile, done);
      });
      scf::YieldOp::create(tb, l);
    });
  }
  b.setInsertionPointToStart(&roles.getElseRegion().front());
  NVVM::SetMaxRegisterOp::create(b, loc, kConsumerRegisters,
                                 NVVM::SetMaxRegisterAction::increase);
  Consumer consumer;
  consumer.warpgroup = kb.add(warpgroup, -1);
  consumer.firstLane = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, kb.c(0));
  consumer.typeA = typeA;
  consumer.typeB = typeB;
  // Descriptors of stage 0 at K 0 (this warpgroup's 64 rows of A); a stage
  // and a K offset add their address / 16 to the start-address field.
  consumer.aDescriptor = matrixDescriptor(
      b, loc, kb.add(pipe.aStart, kb.mul(consumer.warpgroup, kWarpgroupM * kRowBytes)),
      descriptorBits(16, 8 * kRowBytes));
  consumer.bDescriptor = matrixDescriptor(
      b, loc, pipe.bStart,
      p.kMajorB ? descriptorBits(16, 8 * kRowBytes)
                : descriptorBits(stepK * kRowBytes, 8 * kRowBytes));
  // (Split-K runs the epilogue in the kernel that adds the parts.)
  EpilogueInvariants invariants = epilogue && !partials
                                      ? loadEpilogueInvariants(b, loc, epilogue)
                                      : EpilogueInvariants();
  forEachTile(b, [&](OpBuilder &lb, const Tile &tile, Value done) {
    Value sums = multiplyTile(lb, loc, p, pipe, consumer, tile, done);
    // The accumulator holds, per n8 column block j, rows `group` and
    // `group` + 8 of the warp's 16, columns 2 * `inGroup` (+1): the
    // mma.sync m16n8 fragment, tileN / 8 times.
    IndexBuilder x{lb, loc};
    Value group = x.div(lane, 4), inGroup = x.rem(lane, 4);
    Value warpRow = x.add(tile.row0, x.add(x.mul(consumer.warpgroup, kWarpgroupM),
                                           x.mul(warp, 16)));
    auto pairType = VectorType::get({2}, lb.getF32Type());
    for (int64_t j = 0; j < tileN / 8; ++j) {
      Value col = x.add(tile.col0, x.add(x.mul(inGroup, 2), j * 8));
      for (int64_t h = 0; h < 2; ++h) {
        SmallVector<Value> pair;
        for (int64_t e = 0; e < 2; ++e)
          pair.push_back(LLVM::ExtractValueOp::create(lb, loc, sums,
                                                      ArrayRef<int64_t>{j * 4 + h * 2 + e}));
        Value row = x.add(warpRow, x.add(group, h * 8));
        Value value = vector::FromElementsOp::create(lb, loc, pairType, pair);
        if (partials)
          storeAccumulatorPair(lb, loc, partials, tile.partials, row, col, value, p.m, p.n,
                               /*evenRows=*/true, /*accumulate=*/false, linalg::GenericOp(),
                               EpilogueInvariants());
        else
          storeAccumulatorPair(lb, loc, p.c, tile.batch, row, col, value, p.m, p.n, evenRows,
                               /*accumulate=*/!zeroFill, epilogue, invariants);
      }
    }
  });
  b.setInsertionPointAfter(roles);
  gpu::TerminatorOp::create(b, loc);
  if (partials) {
    b.setInsertionPointAfter(launch);
    sumPartialsKernel(b, loc, partials, splits, p.c, evenRows, fused, launchIf);
  }
  return success();
}

} // namespace kiln
