//===- CudaMmaMatmul.cpp - the tensor-core matmul kernel ------------------===//
//
// Matmuls with f32 accumulation on mma.sync: f16/bf16 as m16n8k16, f32 as
// tf32 m16n8k8. A block of 8 warps (2 along M, 4 along N) owns 128 x tileN
// outputs; each warp 64 x tileN/4, held as m16n8 accumulator fragments in
// registers. K advances 64 bytes of A's row at a time (32 halves, 16
// floats) through `stages` shared-memory buffers filled by 16-byte cp.async
// copies issued stages-1 steps ahead, so loads of later steps overlap the
// math of the current one. A fragments come from shared memory by ldmatrix,
// B fragments by ldmatrix.trans (16-bit) or single loads (tf32, which
// ldmatrix cannot transpose). Shared rows are XOR-swizzled in 16-byte chunks
// so the 8 rows one ldmatrix reads hit 8 different banks. Copies outside
// the matrix read nothing and zero-fill (the M, N and K edges). B rows that
// are not whole 16-byte copies, and a B that a copy generic (conv's im2col)
// wrote just before, which is read through that copy's map instead
// (implicit GEMM: the patches are never written), are loaded element by
// element into registers and stored to shared memory after the step's
// math. A batched matmul whose A every batch shares (conv2d's weights) runs
// as one matmul over all batches' columns side by side, one launch; an
// untuned kernel narrows its tiles where it would not fill the GPU
// (fill-blocks).
// Odd N stores C one element at a time. C += the
// tile, as linalg.matmul accumulates, or C = the tile where C was just
// filled with zeros; an elementwise consumer of C (bias, activation) runs on
// the fragments and stores its own output instead. Blocks take their tiles
// in groups of 8 tile rows for L2 reuse.
//
//===----------------------------------------------------------------------===//
#include "CudaMatmul.h"
#include "kiln/Lowering/Common/VectorUtils.h"
#include "CudaMmaFragments.h"
#include "kiln/Lowering/Common/MatmulEpilogue.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

using namespace mlir;

namespace kiln {
namespace {

constexpr int64_t kTileM = 128, kThreads = 256;
constexpr int64_t kWarpsM = 2, kWarpsN = 4, kWarpM = kTileM / kWarpsM;
constexpr int64_t kChunkBytes = 16;

/// What the kernel's shape is in elements of one input type.
struct ElementShape {
  int64_t chunk;     // elements in one 16-byte copy
  int64_t stepBytes; // bytes of A's row per pipeline step (64 or 128)
  int64_t stepK;     // K per pipeline step
  int64_t mmaK;      // K per mma.sync: 2 chunks
  NVVM::MMATypes type;

  static ElementShape of(Type element, int64_t stepBytes) {
    int64_t bytes = element.getIntOrFloatBitWidth() / 8;
    auto type = element.isF32()    ? NVVM::MMATypes::tf32
                : element.isBF16() ? NVVM::MMATypes::bf16
                                   : NVVM::MMATypes::f16;
    return {kChunkBytes / bytes, stepBytes, stepBytes / bytes, 2 * kChunkBytes / bytes, type};
  }
  int64_t aChunksPerRow() const { return stepBytes / kChunkBytes; }
};

/// The stored 16-byte chunk of logical chunk `chunk` in `row` of an A
/// stage: XOR-swizzled so the 8 rows one ldmatrix reads land in 8
/// different bank groups (a 64-byte row shares its 128-byte bank line with
/// the next row, so rows pair up there).
Value swizzleA(IndexBuilder &x, Value chunk, Value row, int64_t chunksPerRow) {
  Value key = chunksPerRow >= 8 ? x.rem(row, 8) : x.rem(x.div(row, 2), 4);
  return x.xorI(chunk, key);
}

struct Operands {
  Value a, b, c, batch; // batch: the block's batch index, or null
  int64_t m, n, k;
  ElementShape shape;
  // B's rows are not whole 16-byte copies, or B is read through the map
  // of the copy that wrote it (gatheredB): it is loaded element by element,
  // unless runs of its K are runs of the copy's input (bKMajor): then B is
  // staged K-major, as A is, by 16-byte copies from that input.
  bool bByElement, bKMajor;
  std::optional<GatheredOperand> gatheredB;
  // A batched matmul with weights every batch shares runs as one matmul
  // over all batches' columns (columnIndices): n counts them all, this is
  // one batch's; 0 when not folded.
  int64_t foldedColumns = 0;
};

/// Row and chunk of the `i`th B chunk a thread stages.
std::pair<Value, Value> bChunkOf(IndexBuilder &x, Value tid, int64_t i, int64_t bChunksPerRow) {
  Value q = x.add(tid, i * kThreads);
  return {x.div(q, bChunksPerRow), x.rem(q, bChunksPerRow)};
}

/// Issues the cp.async copies of K step `step` (dynamic, may be past the
/// end: then nothing is read) into `stage` and closes them as one group.
Value copyStep(OpBuilder &b, Location loc, const Operands &ops, Value aStage,
               Value bStage, Value tid, Value row0, Value col0, Value step,
               Value stage, int64_t tileN) {
  IndexBuilder x{b, loc};
  const int64_t chunkSize = ops.shape.chunk, stepK = ops.shape.stepK;
  Value k0 = x.mul(step, stepK);
  Value zero = x.c(0), full = x.c(chunkSize);
  SmallVector<Value> tokens;
  auto copy = [&](Value src, Value srcRow, Value srcCol, Value inside, Value dst,
                  Value dstRow, Value dstChunk, int64_t foldedColumns) {
    SmallVector<Value> from = columnIndices(x, src, ops.batch, x.select(inside, srcRow, zero),
                                            x.select(inside, srcCol, zero), foldedColumns);
    tokens.push_back(nvgpu::DeviceAsyncCopyOp::create(
        b, loc, dst, ValueRange{stage, dstRow, x.mul(dstChunk, chunkSize)}, src, from,
        b.getIndexAttr(chunkSize), x.select(inside, full, zero), b.getUnitAttr()));
  };
  // A: 128 rows of 4 chunks; the chunk swizzle uses bits 1-2 of the row, as
  // a 64-byte row puts two rows in one 128-byte line of banks.
  const int64_t aChunksPerRow = ops.shape.aChunksPerRow();
  for (int64_t i = 0; i < kTileM * aChunksPerRow / kThreads; ++i) {
    Value q = x.add(tid, i * kThreads);
    Value row = x.div(q, aChunksPerRow), chunk = x.rem(q, aChunksPerRow);
    Value gRow = x.add(row0, row), gK = x.add(k0, x.mul(chunk, chunkSize));
    Value inside = x.both(x.lt(gRow, ops.m), x.lt(gK, ops.k));
    copy(ops.a, gRow, gK, inside, aStage, row, swizzleA(x, chunk, row, aChunksPerRow), 0);
  }
  // B K-major: tileN rows (columns of B) of stepK, as A.
  for (int64_t i = 0; ops.bKMajor && i < tileN * aChunksPerRow / kThreads; ++i) {
    Value q = x.add(tid, i * kThreads);
    Value row = x.div(q, aChunksPerRow), chunk = x.rem(q, aChunksPerRow);
    Value gCol = x.add(col0, row), gK = x.add(k0, x.mul(chunk, chunkSize));
    Value inside = x.both(x.lt(gCol, ops.n), x.lt(gK, ops.k));
    auto [input, from] = ops.gatheredB->source(
        b, loc,
        columnIndices(x, ops.b, ops.batch, x.select(inside, gK, zero),
                      x.select(inside, gCol, zero), ops.foldedColumns));
    Value swizzled = swizzleA(x, chunk, row, aChunksPerRow);
    tokens.push_back(nvgpu::DeviceAsyncCopyOp::create(
        b, loc, bStage, ValueRange{stage, row, x.mul(swizzled, chunkSize)}, input, from,
        b.getIndexAttr(chunkSize), x.select(inside, full, zero), b.getUnitAttr()));
  }
  // B: stepK rows of tileN elements, swizzled by the row's low 3 bits
  // (B by element: gatherStep and storeGathered instead).
  int64_t bChunksPerRow = tileN / chunkSize;
  for (int64_t i = 0; !ops.bByElement && !ops.bKMajor && i < stepK * bChunksPerRow / kThreads;
       ++i) {
    auto [row, chunk] = bChunkOf(x, tid, i, bChunksPerRow);
    Value gK = x.add(k0, row), gCol = x.add(col0, x.mul(chunk, chunkSize));
    Value inside = x.both(x.lt(gK, ops.k), x.lt(gCol, ops.n));
    copy(ops.b, gK, gCol, inside, bStage, row, x.xorI(chunk, x.rem(row, 8)),
         ops.foldedColumns);
  }
  return nvgpu::DeviceAsyncCreateGroupOp::create(
      b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), tokens);
}

/// The B chunks of K step `step` this thread stages, loaded element by
/// element (through the gathered operand's map, if any; zero outside the
/// matrix).
/// They go to shared memory after the current step's math
/// (storeGathered), so the loads' latency overlaps it.
SmallVector<Value> gatherStep(OpBuilder &b, Location loc, const Operands &ops, Value tid,
                              Value col0, Value step, int64_t tileN) {
  IndexBuilder x{b, loc};
  const int64_t chunkSize = ops.shape.chunk, bChunksPerRow = tileN / chunkSize;
  Type element = cast<MemRefType>(ops.b.getType()).getElementType();
  Value zeroIndex = x.c(0);
  Value zero = arith::ConstantOp::create(b, loc, element, b.getZeroAttr(element));
  SmallVector<Value> chunks;
  for (int64_t i = 0; i < ops.shape.stepK * bChunksPerRow / kThreads; ++i) {
    auto [row, chunk] = bChunkOf(x, tid, i, bChunksPerRow);
    Value gK = x.add(x.mul(step, ops.shape.stepK), row);
    Value kInside = x.lt(gK, ops.k);
    SmallVector<Value> elements;
    for (int64_t e = 0; e < chunkSize; ++e) {
      Value gCol = x.add(col0, x.add(x.mul(chunk, chunkSize), e));
      Value inside = x.both(kInside, x.lt(gCol, ops.n));
      SmallVector<Value> at =
          columnIndices(x, ops.b, ops.batch, x.select(inside, gK, zeroIndex),
                        x.select(inside, gCol, zeroIndex), ops.foldedColumns);
      Value v = ops.gatheredB ? ops.gatheredB->load(b, loc, at)
                              : memref::LoadOp::create(b, loc, ops.b, at).getResult();
      elements.push_back(x.select(inside, v, zero));
    }
    chunks.push_back(vector::FromElementsOp::create(
        b, loc, VectorType::get({chunkSize}, element), elements));
  }
  return chunks;
}

/// Stores gatherStep's chunks into B stage `stage`.
void storeGathered(OpBuilder &b, Location loc, const Operands &ops, Value bStage, Value tid,
                   Value stage, ArrayRef<Value> chunks, int64_t tileN) {
  IndexBuilder x{b, loc};
  const int64_t chunkSize = ops.shape.chunk;
  for (auto [i, values] : llvm::enumerate(chunks)) {
    auto [row, chunk] = bChunkOf(x, tid, i, tileN / chunkSize);
    Value swizzled = x.xorI(chunk, x.rem(row, 8));
    vector::StoreOp::create(b, loc, values, bStage,
                            ValueRange{stage, row, x.mul(swizzled, chunkSize)});
  }
}

/// The matmul a kernel runs: `batch` (grid z) of m x n, a batched matmul
/// whose A every batch shares (conv2d's weights) folded into one over all
/// batches' columns (foldedColumns: one batch's), so that small images fill
/// whole tiles and one launch covers the batch.
struct KernelShape {
  int64_t batch, m, n, foldedColumns;

  static KernelShape of(linalg::LinalgOp op) {
    auto c = cast<MemRefType>(op.getDpsInits()[0].getType()).getShape();
    int64_t m = c[c.size() - 2], n = c.back();
    if (!isa<linalg::BatchMatmulOp>(op))
      return {1, m, n, 0};
    if (cast<MemRefType>(op.getDpsInputs()[0].getType()).getRank() == 2)
      return {1, m, c[0] * n, n};
    return {c[0], m, n, 0};
  }
  int64_t blocks(int64_t tileN) const {
    return batch * ((m + kTileM - 1) / kTileM) * ((n + tileN - 1) / tileN);
  }
};

} // namespace

CudaMmaMatmulTunables narrowTilesToFill(linalg::LinalgOp op, CudaMmaMatmulTunables tiling,
                                        int64_t blocks) {
  KernelShape shape = KernelShape::of(op);
  while (tiling.tileN % 128 == 0 && shape.blocks(tiling.tileN) < blocks)
    tiling.tileN /= 2;
  return tiling;
}

bool fitsMmaMatmul(linalg::LinalgOp op, bool tf32) {
  auto a = cast<MemRefType>(op.getDpsInputs()[0].getType());
  auto b = cast<MemRefType>(op.getDpsInputs()[1].getType());
  auto c = cast<MemRefType>(op.getDpsInits()[0].getType());
  Type element = a.getElementType();
  bool takes = element.isF16() || element.isBF16() || (tf32 && element.isF32());
  if (!takes || b.getElementType() != element)
    return false;
  if (!a.getLayout().isIdentity() || !b.getLayout().isIdentity() ||
      !c.getLayout().isIdentity())
    return false;
  // A's rows are whole 16-byte copies; B's that are not are loaded element
  // by element. (A run-time K takes the wgmma kernel only where it is a
  // multiple at run time: wgmmaMisfitAtRunTime.)
  int64_t chunk = kChunkBytes / (element.getIntOrFloatBitWidth() / 8);
  int64_t k = a.getShape().back();
  return ShapedType::isDynamic(k) || k % chunk == 0;
}

LogicalResult buildMmaMatmul(linalg::LinalgOp op, const CudaMmaMatmulTunables &tiling,
                             int64_t maxSharedBytes) {
  const int64_t tileN = tiling.tileN, stages = tiling.stages;
  const int64_t warpN = tileN / kWarpsN, tilesM = kWarpM / 16, tilesN = warpN / 8;
  if (tileN % 64 != 0 || tileN > 256 || stages < 2 ||
      (tiling.stepBytes != 64 && tiling.stepBytes != 128))
    return op->emitError("tensor-core tiling needs a tile N of 64, 128, 192 or 256, "
                         "2 or more stages and a K step of 64 or 128 bytes, got ")
           << tileN << ", " << stages << " and " << tiling.stepBytes;
  const int64_t aStageBytes = kTileM * tiling.stepBytes, bStageBytes = tileN * tiling.stepBytes;
  const int64_t sharedBytes = stages * (aStageBytes + bStageBytes);
  if (sharedBytes > maxSharedBytes)
    return op->emitError("tensor-core tiling needs ")
           << sharedBytes << " bytes of shared memory; at most " << maxSharedBytes;

  Type element = cast<MemRefType>(op.getDpsInputs()[0].getType()).getElementType();
  Operands ops{op.getDpsInputs()[0], op.getDpsInputs()[1], op.getDpsInits()[0], {}, 0, 0, 0,
               ElementShape::of(element, tiling.stepBytes)};
  const int64_t chunkSize = ops.shape.chunk, stepK = ops.shape.stepK, mmaK = ops.shape.mmaK;
  const KernelShape shape = KernelShape::of(op);
  const int64_t batch = shape.batch;
  const bool batched = isa<linalg::BatchMatmulOp>(op) && !shape.foldedColumns;
  ops.m = shape.m;
  ops.n = shape.n;
  ops.k = cast<MemRefType>(ops.a.getType()).getShape().back();
  ops.foldedColumns = shape.foldedColumns;
  ops.gatheredB = findGatheredOperand(op, ops.b);
  // A chunk of B holds columns of one batch.
  int64_t rowColumns = ops.foldedColumns ? ops.foldedColumns : ops.n;
  ops.bKMajor = ops.gatheredB && ops.gatheredB->rowsAreRuns(chunkSize);
  ops.bByElement = ops.gatheredB ? !ops.bKMajor : rowColumns % chunkSize != 0;
  const int64_t steps = (ops.k + stepK - 1) / stepK;
  // Every element of C inside the matrix gets exactly one store, so C =
  // the tile replaces a zero fill followed by C += the tile.
  linalg::FillOp zeroFill = zeroFillBefore(op, ops.c);
  // A bias or activation after the matmul runs on the fragments.
  linalg::GenericOp epilogue = findMatmulEpilogue(op, ops.c);

  OpBuilder b(op);
  Location loc = op.getLoc();
  IndexBuilder ib{b, loc};
  auto workgroup = gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  auto aStageType = MemRefType::get({stages, kTileM, stepK}, element, AffineMap(), workgroup);
  auto bStageType =
      MemRefType::get(ops.bKMajor ? ArrayRef<int64_t>{stages, tileN, stepK}
                                  : ArrayRef<int64_t>{stages, stepK, tileN},
                      element, AffineMap(), workgroup);
  const int64_t numTilesM = (ops.m + kTileM - 1) / kTileM, numTilesN = (ops.n + tileN - 1) / tileN;
  // Dynamic shared memory: beyond 48 KiB a kernel must ask for it at launch
  // (the runtime opts in up to the device's limit).
  Value sharedSize = arith::ConstantIntOp::create(b, loc, sharedBytes, 32);
  auto launch = gpu::LaunchOp::create(
      b, loc, ib.c(numTilesN), ib.c(numTilesM), ib.c(batch), ib.c(kThreads), ib.c(1),
      ib.c(1), sharedSize);

  b.setInsertionPointToStart(&launch.getBody().front());
  IndexBuilder kb{b, loc};
  Value shared = gpu::DynamicSharedMemoryOp::create(
      b, loc, MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), AffineMap(), workgroup));
  Value aStage = memref::ViewOp::create(b, loc, aStageType, shared, kb.c(0), ValueRange{});
  Value bStage = memref::ViewOp::create(b, loc, bStageType, shared, kb.c(stages * aStageBytes),
                                        ValueRange{});
  gpu::KernelDim3 block = launch.getBlockIds();
  Value tid = launch.getThreadIds().x;
  ops.batch = batched ? block.z : Value();
  auto [tileRow, tileCol] = groupedTileOrder(kb, block, kb.c(numTilesM), kb.c(numTilesN));
  Value row0 = kb.mul(tileRow, kTileM), col0 = kb.mul(tileCol, tileN);
  Value lane = kb.rem(tid, 32), warp = kb.div(tid, 32);
  Value warpRow = kb.mul(kb.div(warp, kWarpsN), kWarpM);
  Value warpCol = kb.mul(kb.rem(warp, kWarpsN), warpN);
  // mma fragments give a lane rows `group` (+8) and columns 2*`inGroup` (+1)
  // of C, and B's K rows `inGroup` (+4) in tf32.
  Value group = kb.div(lane, 4), inGroup = kb.rem(lane, 4);

  Value lastGroup;
  for (int64_t s = 0; s + 1 < stages; ++s) {
    lastGroup = copyStep(b, loc, ops, aStage, bStage, tid, row0, col0, kb.c(s), kb.c(s), tileN);
    if (ops.bByElement)
      storeGathered(b, loc, ops, bStage, tid, kb.c(s),
                    gatherStep(b, loc, ops, tid, col0, kb.c(s), tileN), tileN);
  }

  auto accType = VectorType::get({4}, b.getF32Type());
  Value zero = arith::ConstantOp::create(b, loc, accType, DenseElementsAttr::get(accType, 0.0f));
  SmallVector<Value> init(tilesM * tilesN, zero);
  auto loop = scf::ForOp::create(
      b, loc, kb.c(0), kb.c(steps), kb.c(1), init,
      [&](OpBuilder &lb, Location l, Value step, ValueRange acc) {
        IndexBuilder x{lb, l};
        // Step `step` has landed for this thread; the barrier makes it
        // everyone's and frees the stage the next copies overwrite.
        nvgpu::DeviceAsyncWaitOp::create(lb, l, lastGroup, lb.getI32IntegerAttr(stages - 2));
        gpu::BarrierOp::create(lb, l);
        Value ahead = x.add(step, stages - 1), aheadStage = x.rem(ahead, stages);
        SmallVector<Value> gathered;
        if (ops.bByElement)
          gathered = gatherStep(lb, l, ops, tid, col0, ahead, tileN);
        copyStep(lb, l, ops, aStage, bStage, tid, row0, col0, ahead, aheadStage, tileN);
        Value stage = x.rem(step, stages);
        SmallVector<Value> sums(acc.begin(), acc.end());
        for (int64_t kk = 0; kk < stepK / mmaK; ++kk) {
          // ldmatrix.x4: lanes 0-15 address rows of the first chunk of the
          // mma's K, lanes 16-31 those of the second.
          Value half = x.div(lane, 16), row16 = x.rem(lane, 16);
          SmallVector<SmallVector<Value>> aFrags, bFrags;
          for (int64_t i = 0; i < tilesM; ++i) {
            Value row = x.add(warpRow, x.add(row16, i * 16));
            Value chunk = x.add(half, kk * 2);
            Value swizzled = swizzleA(x, chunk, row, ops.shape.aChunksPerRow());
            aFrags.push_back(loadMatrices(lb, l, aStage,
                                          {stage, row, x.mul(swizzled, chunkSize)}, false));
          }
          // B: 16-bit pairs of n8 tiles by ldmatrix.x4.trans; tf32 one
          // element per register; K-major B as A, the x4's matrices
          // (n 0-7, k 0-7), (n 8-15, k 0-7), (n 0-7, k 8-15), (n 8-15, k
          // 8-15) making two n8 tiles.
          for (int64_t j = 0; j < tilesN; ++j) {
            if (ops.bKMajor) {
              if (j % 2 == 0) {
                Value row = x.add(warpCol, x.add(row16, j * 8));
                Value swizzled = swizzleA(x, x.add(half, kk * 2), row, ops.shape.aChunksPerRow());
                auto regs = loadMatrices(lb, l, bStage,
                                         {stage, row, x.mul(swizzled, chunkSize)}, false);
                bFrags.push_back({regs[0], regs[2]});
                bFrags.push_back({regs[1], regs[3]});
              }
              continue;
            }
            if (ops.shape.type != NVVM::MMATypes::tf32) {
              if (j % 2 == 0) {
                Value row = x.add(row16, kk * mmaK);
                Value chunk = x.add(x.div(x.add(warpCol, j * 8), chunkSize), half);
                Value swizzled = x.xorI(chunk, x.rem(row, 8));
                auto regs = loadMatrices(lb, l, bStage,
                                         {stage, row, x.mul(swizzled, chunkSize)}, true);
                bFrags.push_back({regs[0], regs[1]});
                bFrags.push_back({regs[2], regs[3]});
              }
              continue;
            }
            Value col = x.add(warpCol, x.add(group, j * 8));
            Value chunk = x.div(col, chunkSize), within = x.rem(col, chunkSize);
            SmallVector<Value> regs;
            for (int64_t h = 0; h < 2; ++h) {
              Value row = x.add(inGroup, kk * mmaK + h * 4);
              Value at = x.add(x.mul(x.xorI(chunk, x.rem(row, 8)), chunkSize), within);
              Value v = memref::LoadOp::create(lb, l, bStage, ValueRange{stage, row, at});
              regs.push_back(arith::BitcastOp::create(lb, l, lb.getI32Type(), v));
            }
            bFrags.push_back(regs);
          }
          for (int64_t i = 0; i < tilesM; ++i)
            for (int64_t j = 0; j < tilesN; ++j) {
              Value &sum = sums[i * tilesN + j];
              sum = mmaSync(lb, l, aFrags[i], bFrags[j], sum, ops.shape.type, ops.shape.mmaK);
            }
        }
        // The stage was last read by the previous step's math, which
        // every thread finished before this step's barrier.
        if (ops.bByElement)
          storeGathered(lb, l, ops, bStage, tid, aheadStage, gathered, tileN);
        scf::YieldOp::create(lb, l, sums);
      });
  // The copies issued past the last step still write shared memory.
  nvgpu::DeviceAsyncWaitOp::create(b, loc, lastGroup, b.getI32IntegerAttr(0));

  Value pairCol = kb.mul(inGroup, 2);
  Value m = kb.c(ops.m), n = kb.c(ops.n);
  EpilogueInvariants invariants =
      epilogue ? loadEpilogueInvariants(b, loc, epilogue) : EpilogueInvariants();
  for (int64_t i = 0; i < tilesM; ++i)
    for (int64_t j = 0; j < tilesN; ++j) {
      Value acc = loop.getResult(i * tilesN + j);
      Value col = kb.add(kb.add(col0, warpCol), kb.add(pairCol, j * 8));
      for (int64_t h = 0; h < 2; ++h) {
        Value row = kb.add(kb.add(row0, warpRow), kb.add(group, i * 16 + h * 8));
        Value pair = vector::ExtractStridedSliceOp::create(
            b, loc, acc, ArrayRef<int64_t>{2 * h}, ArrayRef<int64_t>{2}, ArrayRef<int64_t>{1});
        storeAccumulatorPair(b, loc, ops.c, ops.batch, row, col, pair, m, n,
                             rowColumns % 2 == 0, /*accumulate=*/!zeroFill,
                             epilogue, invariants, ops.foldedColumns);
      }
    }
  gpu::TerminatorOp::create(b, loc);
  kiln::eraseReplacedMatmul(op, zeroFill, epilogue);
  if (ops.gatheredB)
    ops.gatheredB->erase();
  return success();
}

} // namespace kiln
