//===- CudaWgmmaMatmul.cpp - the Hopper (sm_90a) matmul kernel ------------===//
//
// f16/bf16 matmuls with f32 accumulation on warpgroup MMA: a block of two
// warpgroups owns 128 x tileN outputs, each warpgroup 64 x tileN held in
// registers as one wgmma accumulator. K advances 64 elements (128 bytes of
// A's row) at a time through `stages` shared-memory buffers that 16-byte
// cp.async copies fill stages-2 steps ahead; wgmma reads both operands
// straight from shared memory through matrix descriptors, so no thread
// loads fragments. Both operands use the 128-byte swizzle (16-byte chunk c
// of a 128-byte row r stored at chunk c ^ (r % 8)): A as 128 rows of 64 K
// (K-major), B as tileN/64 blocks of 64 K rows x 64 columns (N-major, which
// wgmma transposes). The wgmma of one step stays in flight while the next
// is issued; the stage a copy overwrites was read two steps before, which
// every warpgroup has waited for by the step's barrier. Copies outside the
// matrix zero-fill (the M, N and K edges); the store masks the edges and
// runs an elementwise consumer of C (bias, activation) as the mma.sync
// kernel does, from the same fragment layout.
//
//===----------------------------------------------------------------------===//
#include "CudaMatmul.h"
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

constexpr int64_t kTileM = 128, kWarpgroupM = 64, kThreads = 256;
constexpr int64_t kRowBytes = CudaWgmmaMatmulTunables::kStepBytes; // a swizzled row
constexpr int64_t kChunkBytes = 16, kChunksPerRow = kRowBytes / kChunkBytes;
constexpr int64_t kBlockN = 64; // columns of B in one swizzled block
constexpr int64_t kMmaK = 16;   // K of one wgmma (16-bit inputs)

/// A wgmma shared-memory matrix descriptor without its start address: the
/// 128-byte swizzle, and the byte strides between 8-row groups (`stride`)
/// and between 64-column blocks of an N-major operand (`leading`).
int64_t descriptorBits(int64_t leading, int64_t stride) {
  return (leading / 16) << 16 | (stride / 16) << 32 | int64_t(1) << 62;
}

struct Problem {
  Value a, b, c, batch; // batch: the block's batch index, or null
  int64_t m, n, k, tileN;
  Type element;
  int64_t chunk() const { return kChunkBytes / (element.getIntOrFloatBitWidth() / 8); }
  int64_t stepK() const { return kRowBytes / (element.getIntOrFloatBitWidth() / 8); }
};

/// Issues the cp.async copies of K step `step` (may be past the end: then
/// nothing is read) into stage `stage` of `aStages` (stages x 128 x stepK)
/// and `bStages` (stages x tileN/64 x stepK x 64), as one group.
Value copyStep(OpBuilder &b, Location loc, const Problem &p, Value aStages, Value bStages,
              Value tid, Value row0, Value col0, Value step, Value stage) {
  IndexBuilder x{b, loc};
  const int64_t chunk = p.chunk();
  Value k0 = x.mul(step, p.stepK());
  Value zero = x.c(0), full = x.c(chunk);
  SmallVector<Value> tokens;
  auto copy = [&](Value src, Value srcRow, Value srcCol, Value inside, Value dst,
                  SmallVector<Value> dstIndices) {
    SmallVector<Value> from = matrixIndices(src, p.batch, x.select(inside, srcRow, zero),
                                            x.select(inside, srcCol, zero));
    tokens.push_back(nvgpu::DeviceAsyncCopyOp::create(
        b, loc, dst, dstIndices, src, from, b.getIndexAttr(chunk),
        x.select(inside, full, zero), b.getUnitAttr()));
  };
  for (int64_t i = 0; i < kTileM * kChunksPerRow / kThreads; ++i) {
    Value q = x.add(tid, i * kThreads);
    Value row = x.div(q, kChunksPerRow), c = x.rem(q, kChunksPerRow);
    Value gRow = x.add(row0, row), gK = x.add(k0, x.mul(c, chunk));
    Value inside = x.both(x.lt(gRow, p.m), x.lt(gK, p.k));
    Value at = x.mul(x.xorI(c, x.rem(row, 8)), chunk);
    copy(p.a, gRow, gK, inside, aStages, {stage, row, at});
  }
  const int64_t bChunksPerRow = p.tileN / chunk;
  for (int64_t i = 0; i < p.stepK() * bChunksPerRow / kThreads; ++i) {
    Value q = x.add(tid, i * kThreads);
    Value row = x.div(q, bChunksPerRow), c = x.rem(q, bChunksPerRow);
    Value gK = x.add(k0, row), gCol = x.add(col0, x.mul(c, chunk));
    Value inside = x.both(x.lt(gK, p.k), x.lt(gCol, p.n));
    Value block = x.div(c, kChunksPerRow);
    Value at = x.mul(x.xorI(x.rem(c, kChunksPerRow), x.rem(row, 8)), chunk);
    copy(p.b, gK, gCol, inside, bStages, {stage, block, row, at});
  }
  return nvgpu::DeviceAsyncCreateGroupOp::create(
      b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), tokens);
}

/// `index` as an i64.
Value toI64(OpBuilder &b, Location loc, Value index) {
  return arith::IndexCastUIOp::create(b, loc, b.getI64Type(), index);
}

} // namespace

bool fitsWgmmaMatmul(linalg::LinalgOp op) {
  Type element = cast<MemRefType>(op.getDpsInputs()[0].getType()).getElementType();
  // B's rows are whole 16-byte copies here; conv's im2col stays on
  // mma.sync, which reads the patches in place (implicit GEMM).
  Value b = op.getDpsInputs()[1];
  return (element.isF16() || element.isBF16()) && fitsMmaMatmul(op, /*tf32=*/false) &&
         cast<MemRefType>(b.getType()).getShape().back() % 8 == 0 &&
         !findGatheredOperand(op, b);
}

LogicalResult buildWgmmaMatmul(linalg::LinalgOp op, const CudaWgmmaMatmulTunables &tiling,
                               int64_t maxSharedBytes) {
  const int64_t tileN = tiling.tileN, stages = tiling.stages;
  if ((tileN != 64 && tileN != 128 && tileN != 256) || stages < 3)
    return op->emitError("wgmma tiling needs a tile N of 64, 128 or 256 and 3 or more "
                         "stages, got ")
           << tileN << " and " << stages;
  if (tiling.sharedBytes() > maxSharedBytes)
    return op->emitError("wgmma tiling needs ")
           << tiling.sharedBytes() << " bytes of shared memory; at most " << maxSharedBytes;

  Type element = cast<MemRefType>(op.getDpsInputs()[0].getType()).getElementType();
  bool batched = isa<linalg::BatchMatmulOp>(op);
  Problem p{op.getDpsInputs()[0], op.getDpsInputs()[1], op.getDpsInits()[0], {}, 0, 0, 0,
            tileN, element};
  auto cShape = cast<MemRefType>(p.c.getType()).getShape();
  int64_t batch = batched ? cShape[0] : 1;
  p.m = cShape[cShape.size() - 2];
  p.n = cShape.back();
  p.k = cast<MemRefType>(p.a.getType()).getShape().back();
  const int64_t stepK = p.stepK(), steps = (p.k + stepK - 1) / stepK;
  const int64_t ahead = stages - 2; // steps in flight beyond the current one
  linalg::FillOp zeroFill = zeroFillBefore(op, p.c);
  linalg::GenericOp epilogue = batched ? linalg::GenericOp() : findMatmulEpilogue(op, p.c);

  OpBuilder b(op);
  Location loc = op.getLoc();
  IndexBuilder ib{b, loc};
  MLIRContext *ctx = b.getContext();
  auto workgroup = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  auto aStagesType = MemRefType::get({stages, kTileM, stepK}, element, AffineMap(), workgroup);
  auto bStagesType = MemRefType::get({stages, tileN / kBlockN, stepK, kBlockN}, element,
                                     AffineMap(), workgroup);
  const int64_t aStageBytes = kTileM * kRowBytes, bStageBytes = tileN * kRowBytes;
  const int64_t numTilesM = (p.m + kTileM - 1) / kTileM, numTilesN = (p.n + tileN - 1) / tileN;
  Value sharedSize = arith::ConstantIntOp::create(b, loc, tiling.sharedBytes(), 32);
  auto launch = gpu::LaunchOp::create(b, loc, ib.c(numTilesN), ib.c(numTilesM), ib.c(batch),
                                      ib.c(kThreads), ib.c(1), ib.c(1), sharedSize);

  b.setInsertionPointToStart(&launch.getBody().front());
  IndexBuilder kb{b, loc};
  Value shared = gpu::DynamicSharedMemoryOp::create(
      b, loc, MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), AffineMap(), workgroup));
  // The swizzle pattern repeats every 1024 bytes and wgmma assumes it
  // starts there: the stages begin at the first such boundary.
  constexpr int64_t kAlign = CudaWgmmaMatmulTunables::kAlignment;
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, shared);
  Value pad = kb.rem(arith::SubIOp::create(b, loc, kb.c(kAlign), kb.rem(base, kAlign)), kAlign);
  Value aStages = memref::ViewOp::create(b, loc, aStagesType, shared, pad, ValueRange{});
  Value bStages = memref::ViewOp::create(b, loc, bStagesType, shared,
                                         kb.add(pad, stages * aStageBytes), ValueRange{});
  gpu::KernelDim3 block = launch.getBlockIds();
  Value tid = launch.getThreadIds().x;
  p.batch = batched ? block.z : Value();
  auto [tileRow, tileCol] = groupedTileOrder(kb, block, numTilesM, numTilesN);
  Value row0 = kb.mul(tileRow, kTileM), col0 = kb.mul(tileCol, tileN);
  Value warpgroup = kb.div(tid, 128), lane = kb.rem(tid, 32), warp = kb.rem(kb.div(tid, 32), 4);

  // Descriptors of stage 0 at K 0 (this warpgroup's 64 rows of A); a stage
  // and a K offset add their address / 16 to the start-address field.
  Value aStart = kb.add(kb.add(base, pad), kb.mul(warpgroup, kWarpgroupM * kRowBytes));
  Value bStart = kb.add(kb.add(base, pad), stages * aStageBytes);
  auto descriptor = [&](Value start, int64_t bits) {
    Value field = toI64(b, loc, kb.div(start, 16));
    return arith::OrIOp::create(b, loc, field, arith::ConstantIntOp::create(b, loc, bits, 64))
        .getResult();
  };
  Value aDescriptor = descriptor(aStart, descriptorBits(kChunkBytes, 8 * kRowBytes));
  Value bDescriptor = descriptor(bStart, descriptorBits(stepK * kRowBytes, 8 * kRowBytes));

  Value lastGroup;
  for (int64_t s = 0; s < ahead; ++s)
    lastGroup = copyStep(b, loc, p, aStages, bStages, tid, row0, col0, kb.c(s), kb.c(s));

  Type f32 = b.getF32Type();
  auto accType = LLVM::LLVMStructType::getLiteral(
      ctx, SmallVector<Type>(kWarpgroupM * tileN / 128, f32));
  Value zeros = LLVM::ZeroOp::create(b, loc, accType);
  auto wgmmaType = element.isBF16() ? NVVM::WGMMATypes::bf16 : NVVM::WGMMATypes::f16;
  auto loop = scf::ForOp::create(
      b, loc, kb.c(0), kb.c(steps), kb.c(1), ValueRange{zeros},
      [&](OpBuilder &lb, Location l, Value step, ValueRange acc) {
        IndexBuilder x{lb, l};
        // This thread's copies of `step` have landed; the fence hands them
        // to the async proxy wgmma reads through, the barrier makes them
        // everyone's, and every warpgroup is past the step-2 wgmma that read
        // the stage the next copies overwrite.
        nvgpu::DeviceAsyncWaitOp::create(lb, l, lastGroup, lb.getI32IntegerAttr(ahead - 1));
        NVVM::FenceProxyOp::create(lb, l, NVVM::ProxyKind::async_shared,
                                   NVVM::SharedSpaceAttr::get(lb.getContext(),
                                                              NVVM::SharedSpace::shared_cta));
        gpu::BarrierOp::create(lb, l);
        Value next = x.add(step, ahead);
        copyStep(lb, l, p, aStages, bStages, tid, row0, col0, next, x.rem(next, stages));
        Value stage = toI64(lb, l, x.rem(step, stages));
        auto offset = [&](Value d, int64_t stageBytes, int64_t bytes) {
          Value stride = arith::ConstantIntOp::create(lb, l, stageBytes / 16, 64);
          Value at = arith::AddIOp::create(
              lb, l, arith::MulIOp::create(lb, l, stage, stride),
              arith::ConstantIntOp::create(lb, l, bytes / 16, 64));
          return arith::AddIOp::create(lb, l, d, at).getResult();
        };
        NVVM::WgmmaFenceAlignedOp::create(lb, l);
        Value sum = acc[0];
        for (int64_t kk = 0; kk < stepK / kMmaK; ++kk) {
          // A: 16 K are 32 bytes along the swizzled row; B: 16 K rows.
          Value aAt = offset(aDescriptor, aStageBytes, kk * kMmaK * 2);
          Value bAt = offset(bDescriptor, bStageBytes, kk * kMmaK * kRowBytes);
          sum = NVVM::WgmmaMmaAsyncOp::create(
              lb, l, accType, sum, aAt, bAt, NVVM::MMAShapeAttr::get(lb.getContext(), 64, tileN, kMmaK),
              wgmmaType, wgmmaType, NVVM::WGMMATypes::f32, NVVM::WGMMAScaleOut::one,
              NVVM::WGMMAScaleIn::one, NVVM::WGMMAScaleIn::one,
              NVVM::MMALayout::row, // A K-major
              NVVM::MMALayout::row, // B N-major: transposed by wgmma
              /*satfinite=*/nullptr);
        }
        NVVM::WgmmaGroupSyncAlignedOp::create(lb, l);
        NVVM::WgmmaWaitGroupSyncOp::create(lb, l, 1);
        scf::YieldOp::create(lb, l, sum);
      });
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
  // The copies issued past the last step still write shared memory.
  nvgpu::DeviceAsyncWaitOp::create(b, loc, lastGroup, b.getI32IntegerAttr(0));

  // The accumulator holds, per n8 column block j, rows `group` and
  // `group` + 8 of the warp's 16, columns 2 * `inGroup` (+1): the mma.sync
  // m16n8 fragment, tileN / 8 times.
  Value group = kb.div(lane, 4), inGroup = kb.rem(lane, 4);
  Value warpRow = kb.add(row0, kb.add(kb.mul(warpgroup, kWarpgroupM), kb.mul(warp, 16)));
  Value sums = loop.getResult(0);
  auto pairType = VectorType::get({2}, f32);
  for (int64_t j = 0; j < tileN / 8; ++j) {
    Value col = kb.add(col0, kb.add(kb.mul(inGroup, 2), j * 8));
    for (int64_t h = 0; h < 2; ++h) {
      SmallVector<Value> pair;
      for (int64_t e = 0; e < 2; ++e)
        pair.push_back(LLVM::ExtractValueOp::create(b, loc, sums, ArrayRef<int64_t>{j * 4 + h * 2 + e}));
      Value row = kb.add(warpRow, kb.add(group, h * 8));
      storeAccumulatorPair(b, loc, p.c, p.batch, row, col,
                           vector::FromElementsOp::create(b, loc, pairType, pair), p.m, p.n,
                           /*accumulate=*/!zeroFill, epilogue);
    }
  }
  gpu::TerminatorOp::create(b, loc);
  op->erase();
  if (zeroFill)
    zeroFill->erase();
  if (epilogue)
    epilogue->erase();
  return success();
}

} // namespace kiln
