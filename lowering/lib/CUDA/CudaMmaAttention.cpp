//===- CudaMmaAttention.cpp - the kiln-cuda-mma-attention pass ------------===//
//
// kiln_kernel.attention of f16/bf16 with head dims 64 or 128 as a
// FlashAttention-2 kernel on mma.sync m16n8k16. A block of 8 warps owns 128
// query rows of one batch entry, a warp 16 of them, whose Q fragments stay
// in registers. Keys come in tiles of 64 (K and V rows by 16-byte cp.async
// into two swizzled shared-memory stages, the next tile loading while the
// current one is used): S = Q K^T into f32 fragments (K by ldmatrix, its
// rows being B's columns); scale (times log2 e), mask (tails, causal, the
// mask operand; only in the tiles that need it); the row max by quad
// shuffles; P = 2^(S - max) by ex2.approx rounded to the input type
// is, fragment for fragment, the A operand of P V (an m16n8 C fragment pair
// is an m16n8k16 A half), V by ldmatrix.trans; O and the row sum rescaled
// by 2^(max_old - max_new). Causal blocks stop at the tile of their last
// row. At the end O / sum, rounded, stored. Rows and keys past the ends are
// zero-filled in shared memory and masked. Batch and sequence lengths may
// be run-time sizes (the grid and the tile counts then host arithmetic).
//
//===----------------------------------------------------------------------===//
#include "CudaAttention.h"
#include "CudaMatmul.h"
#include "CudaMmaFragments.h"
#include "kiln/Lowering/CUDA/Passes.h"
#include "kiln/Lowering/Kernels/KernelOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace kiln {
#define GEN_PASS_DEF_KILNCUDAMMAATTENTION
#include "kiln/Lowering/CUDA/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using kiln::IndexBuilder;

namespace {

constexpr int64_t kRows = 128, kWarps = 8, kThreads = 32 * kWarps, kKeys = 64;
constexpr int64_t kChunk = 8; // 16-bit elements in a 16-byte copy
using kiln::dimOf;

/// cp.async of `rows` rows of `src[batch]` from `row0` (rows at or past
/// `limit` zero-filled) into `dst[stage]` (or `dst` without a stage), 16-byte
/// chunks XOR-swizzled by the row's low 3 bits.
SmallVector<Value> copyRows(OpBuilder &b, Location loc, Value src, Value batch, Value row0,
                            Value limit, Value dst, Value stage, int64_t rows, Value tid) {
  IndexBuilder x{b, loc};
  int64_t chunksPerRow = dimOf(src, 2) / kChunk;
  SmallVector<Value> tokens;
  for (int64_t i = 0; i < rows * chunksPerRow / kThreads; ++i) {
    Value q = x.add(tid, i * kThreads);
    Value row = x.div(q, chunksPerRow), chunk = x.rem(q, chunksPerRow);
    Value srcRow = x.add(row0, row);
    Value inside = x.lt(srcRow, limit);
    SmallVector<Value> to{row, x.mul(x.xorI(chunk, x.rem(row, 8)), kChunk)};
    if (stage)
      to.insert(to.begin(), stage);
    tokens.push_back(nvgpu::DeviceAsyncCopyOp::create(
        b, loc, dst, to, src, ValueRange{batch, x.select(inside, srcRow, x.c(0)), x.mul(chunk, kChunk)},
        b.getIndexAttr(kChunk), x.select(inside, x.c(kChunk), x.c(0)), b.getUnitAttr()));
  }
  return tokens;
}

Value group(OpBuilder &b, Location loc, ValueRange tokens) {
  return nvgpu::DeviceAsyncCreateGroupOp::create(
      b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), tokens);
}

LogicalResult buildMmaAttention(kiln::kernel::AttentionOp op, int64_t maxSharedBytes) {
  Value q = op.getQ(), k = op.getK(), v = op.getV();
  Type element = cast<MemRefType>(q.getType()).getElementType();
  auto mmaType = element.isF16() ? NVVM::MMATypes::f16 : NVVM::MMATypes::bf16;
  const int64_t depth = dimOf(q, 2), width = dimOf(v, 2);
  const int64_t qBytes = kRows * depth * 2, kBytes = 2 * kKeys * depth * 2, vBytes = 2 * kKeys * width * 2;
  if (qBytes + kBytes + vBytes > maxSharedBytes)
    return op->emitError("fused attention needs ") << qBytes + kBytes + vBytes
                                                    << " bytes of shared memory; at most " << maxSharedBytes;

  OpBuilder b(op);
  Location loc = op.getLoc();
  IndexBuilder ib{b, loc};
  auto [batch, rows, keys, rowTiles, keyTiles, grid] = kiln::attentionGrid(b, loc, op, kRows, kKeys);
  auto workgroup = gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  auto launch = gpu::LaunchOp::create(b, loc, grid, ib.c(1), ib.c(1), ib.c(kThreads),
                                      ib.c(1), ib.c(1),
                                      arith::ConstantIntOp::create(b, loc, qBytes + kBytes + vBytes, 32));
  b.setInsertionPointToStart(&launch.getBody().front());
  IndexBuilder x{b, loc};
  Value shared = gpu::DynamicSharedMemoryOp::create(
      b, loc, MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), AffineMap(), workgroup));
  auto view = [&](ArrayRef<int64_t> shape, int64_t offset) -> Value {
    return memref::ViewOp::create(b, loc, MemRefType::get(shape, element, AffineMap(), workgroup),
                                  shared, x.c(offset), ValueRange{});
  };
  Value qTile = view({kRows, depth}, 0);
  Value kStages = view({2, kKeys, depth}, qBytes);
  Value vStages = view({2, kKeys, width}, qBytes + kBytes);

  Value blockId = launch.getBlockIds().x, tid = launch.getThreadIds().x;
  Value n = x.div(blockId, rowTiles);
  Value row0 = x.mul(arith::RemUIOp::create(b, loc, blockId, rowTiles), kRows);
  Value lane = x.rem(tid, 32), warpRow = x.mul(x.div(tid, 32), 16);
  // A lane's C-fragment rows: quad (+8); its columns: 2 * inQuad (+1).
  Value quad = x.div(lane, 4), inQuad = x.rem(lane, 4);
  Value rowA = x.add(x.add(row0, warpRow), quad), rowB = x.add(rowA, 8);

  // Key tiles: all, or (causal) up to the one holding the block's last row.
  Value tiles = keyTiles;
  if (op.getCausal())
    tiles = arith::MinUIOp::create(b, loc, tiles, x.div(x.add(row0, kRows + kKeys - 1), kKeys));
  auto loadKeys = [&](OpBuilder &lb, Location l, Value tile, Value stage) {
    IndexBuilder y{lb, l};
    Value key0 = y.mul(tile, kKeys);
    auto tokens = copyRows(lb, l, k, n, key0, keys, kStages, stage, kKeys, tid);
    llvm::append_range(tokens, copyRows(lb, l, v, n, key0, keys, vStages, stage, kKeys, tid));
    return tokens;
  };
  auto first = copyRows(b, loc, q, n, row0, rows, qTile, Value(), kRows, tid);
  llvm::append_range(first, loadKeys(b, loc, x.c(0), x.c(0)));
  Value lastGroup = group(b, loc, first);
  nvgpu::DeviceAsyncWaitOp::create(b, loc, lastGroup, b.getI32IntegerAttr(0));
  gpu::BarrierOp::create(b, loc);
  // ldmatrix.x4 of A: lanes 0-15 address rows of the first 8 columns, 16-31
  // of the next 8.
  Value half = x.div(lane, 16), row16 = x.rem(lane, 16);
  SmallVector<SmallVector<Value>> qFrags;
  for (int64_t kk = 0; kk < depth / 16; ++kk) {
    Value row = x.add(warpRow, row16);
    Value chunk = x.xorI(x.add(half, 2 * kk), x.rem(row, 8));
    qFrags.push_back(kiln::loadMatrices(b, loc, qTile, {row, x.mul(chunk, kChunk)}, false));
  }

  auto accType = VectorType::get({4}, b.getF32Type());
  Value zero = arith::ConstantOp::create(b, loc, accType, DenseElementsAttr::get(accType, 0.0f));
  kiln::AttentionFragments frags{op, n, rowA, rowB, inQuad, x.add(row0, warpRow), rows, keys};
  // State: the online softmax's, then O.
  SmallVector<Value> init = kiln::SoftmaxState::initial(b, loc).values();
  init.append(width / 8, zero);
  auto loop = scf::ForOp::create(
      b, loc, x.c(0), tiles, x.c(1), init,
      [&](OpBuilder &lb, Location l, Value tile, ValueRange state) {
        IndexBuilder y{lb, l};
        nvgpu::DeviceAsyncWaitOp::create(lb, l, lastGroup, lb.getI32IntegerAttr(0));
        gpu::BarrierOp::create(lb, l);
        Value next = y.add(tile, 1);
        group(lb, l, loadKeys(lb, l, next, y.rem(next, 2)));
        Value stage = y.rem(tile, 2);

        // S = Q K^T: K's rows are B's columns, so plain ldmatrix gives B;
        // matrices 0-3 of an x4: keys 0-7 / 8-15 by columns 0-7 / 8-15.
        SmallVector<Value> s(kKeys / 8, zero);
        for (int64_t kk = 0; kk < depth / 16; ++kk)
          for (int64_t np = 0; np < kKeys / 16; ++np) {
            Value key = y.add(y.add(y.mul(y.div(lane, 16), 8), y.rem(lane, 8)), np * 16);
            Value chunk = y.xorI(y.add(y.rem(y.div(lane, 8), 2), 2 * kk), y.rem(key, 8));
            auto regs = kiln::loadMatrices(lb, l, kStages, {stage, key, y.mul(chunk, kChunk)}, false);
            s[2 * np] = kiln::mmaSync(lb, l, qFrags[kk], {regs[0], regs[1]}, s[2 * np], mmaType, 16);
            s[2 * np + 1] = kiln::mmaSync(lb, l, qFrags[kk], {regs[2], regs[3]}, s[2 * np + 1], mmaType, 16);
          }

        SmallVector<Value> flat;
        for (Value fragment : s)
          for (int64_t e = 0; e < 4; ++e)
            flat.push_back(vector::ExtractOp::create(lb, l, fragment, ArrayRef<int64_t>{e}));
        kiln::SoftmaxStep softmax = kiln::onlineSoftmaxStep(
            lb, l, frags, flat, y.mul(tile, kKeys), kiln::SoftmaxState::of(state.take_front(4)));
        SmallVector<Value> newState = softmax.next.values();

        // O = O * alpha + P V.
        Value alphaPairs = vector::FromElementsOp::create(
            lb, l, accType, ValueRange{softmax.alphaA, softmax.alphaA, softmax.alphaB, softmax.alphaB});
        SmallVector<Value> o;
        for (Value acc : state.drop_front(4))
          o.push_back(arith::MulFOp::create(lb, l, acc, alphaPairs));
        for (int64_t kk = 0; kk < kKeys / 16; ++kk) {
          SmallVector<Value> pFrag = kiln::probabilityFragment(lb, l, softmax.probs, kk, element, false);
          for (int64_t dp = 0; dp < width / 16; ++dp) {
            Value key = y.add(row16, kk * 16);
            Value chunk = y.xorI(y.add(half, 2 * dp), y.rem(key, 8));
            auto regs = kiln::loadMatrices(lb, l, vStages, {stage, key, y.mul(chunk, kChunk)}, true);
            o[2 * dp] = kiln::mmaSync(lb, l, pFrag, {regs[0], regs[1]}, o[2 * dp], mmaType, 16);
            o[2 * dp + 1] = kiln::mmaSync(lb, l, pFrag, {regs[2], regs[3]}, o[2 * dp + 1], mmaType, 16);
          }
        }
        newState.append(o);
        scf::YieldOp::create(lb, l, newState);
      });
  // The copies issued past the last tile still write shared memory.
  nvgpu::DeviceAsyncWaitOp::create(b, loc, lastGroup, b.getI32IntegerAttr(0));

  // out = O / sum.
  auto [sumA, sumB] = kiln::rowSums(b, loc, kiln::SoftmaxState::of(loop.getResults().take_front(4)));
  for (int64_t j = 0; j < width / 8; ++j) {
    Value acc = loop.getResult(4 + j);
    Value col = x.add(x.mul(inQuad, 2), j * 8);
    for (int64_t h = 0; h < 2; ++h) {
      Value pair = vector::ExtractStridedSliceOp::create(b, loc, acc, ArrayRef<int64_t>{2 * h},
                                                         ArrayRef<int64_t>{2}, ArrayRef<int64_t>{1});
      kiln::storeOutputPair(b, loc, frags, h ? rowB : rowA, col, pair, h ? sumB : sumA);
    }
  }
  gpu::TerminatorOp::create(b, loc);
  kiln::eraseReplacedAttention(op);
  return success();
}

struct KilnCudaMmaAttentionPass : kiln::impl::KilnCudaMmaAttentionBase<KilnCudaMmaAttentionPass> {
  using KilnCudaMmaAttentionBase::KilnCudaMmaAttentionBase;
  void runOnOperation() override {
    SmallVector<kiln::kernel::AttentionOp> ops;
    getOperation().walk([&](kiln::kernel::AttentionOp op) {
      if (isa<MemRefType>(op.getOut().getType()) && kiln::fitsTensorCoreKernel(op))
        ops.push_back(op);
    });
    for (auto op : ops)
      if (failed(buildMmaAttention(op, maxSharedBytes)))
        return signalPassFailure();
  }
};

} // namespace
