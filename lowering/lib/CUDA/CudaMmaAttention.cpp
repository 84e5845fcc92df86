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
// zero-filled in shared memory and masked.
//
//===----------------------------------------------------------------------===//
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

#include <limits>

namespace kiln {
#define GEN_PASS_DEF_KILNCUDAMMAATTENTION
#include "kiln/Lowering/CUDA/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using kiln::IndexBuilder;

namespace {

constexpr int64_t kRows = 128, kWarps = 8, kThreads = 32 * kWarps, kKeys = 64;
constexpr int64_t kChunk = 8; // 16-bit elements in a 16-byte copy
constexpr double kLog2e = 1.4426950408889634;

int64_t dimOf(Value buffer, unsigned d) { return cast<MemRefType>(buffer.getType()).getDimSize(d); }

bool fitsMmaAttention(kiln::kernel::AttentionOp op) {
  Type element = cast<MemRefType>(op.getQ().getType()).getElementType();
  auto dense = [](Value v) { return cast<MemRefType>(v.getType()).getLayout().isIdentity(); };
  return kiln::fitsTensorCoreAttention(element, dimOf(op.getQ(), 2), dimOf(op.getV(), 2)) &&
         dense(op.getQ()) && dense(op.getK()) && dense(op.getV()) && dense(op.getOut());
}

/// cp.async of `rows` rows of `src[batch]` from `row0` (rows at or past
/// `limit` zero-filled) into `dst[stage]` (or `dst` without a stage), 16-byte
/// chunks XOR-swizzled by the row's low 3 bits.
SmallVector<Value> copyRows(OpBuilder &b, Location loc, Value src, Value batch, Value row0,
                            int64_t limit, Value dst, Value stage, int64_t rows, Value tid) {
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

/// Max or sum of `v` over the 4 lanes of a quad (the lanes holding one row).
Value quadReduce(OpBuilder &b, Location loc, Value v, bool max) {
  for (int32_t offset : {1, 2}) {
    Value other = gpu::ShuffleOp::create(b, loc, v, offset, 32, gpu::ShuffleMode::XOR).getShuffleResult();
    v = max ? Value(arith::MaximumFOp::create(b, loc, v, other))
            : Value(arith::AddFOp::create(b, loc, v, other));
  }
  return v;
}

/// Two f32 values rounded to `element` in one 32-bit register, as
/// nvvm.mma.sync takes its A operand (vector<2xf16>, or i32 for bf16).
Value packPair(OpBuilder &b, Location loc, Value lo, Value hi, Type element) {
  auto pair = vector::FromElementsOp::create(b, loc, VectorType::get({2}, b.getF32Type()), ValueRange{lo, hi});
  Value rounded = arith::TruncFOp::create(b, loc, VectorType::get({2}, element), pair);
  if (element.isF16())
    return rounded;
  Value word = vector::BitCastOp::create(b, loc, VectorType::get({1}, b.getI32Type()), rounded);
  return vector::ExtractOp::create(b, loc, word, ArrayRef<int64_t>{0});
}

Value f32(OpBuilder &b, Location loc, double v) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
}

/// 2^x by the SFU (ex2.approx.ftz: 2 ulp, 2^-inf = 0), as flash kernels
/// take their exponentials; math.exp would become a polynomial.
Value exp2(OpBuilder &b, Location loc, Value x) {
  return LLVM::CallIntrinsicOp::create(b, loc, b.getF32Type(),
                                       b.getStringAttr("llvm.nvvm.ex2.approx.ftz.f32"), ValueRange{x})
      .getResult(0);
}

LogicalResult buildMmaAttention(kiln::kernel::AttentionOp op, int64_t maxSharedBytes) {
  Value q = op.getQ(), k = op.getK(), v = op.getV(), out = op.getOut(), mask = op.getMask();
  Type element = cast<MemRefType>(q.getType()).getElementType();
  auto mmaType = element.isF16() ? NVVM::MMATypes::f16 : NVVM::MMATypes::bf16;
  const int64_t batch = dimOf(q, 0), rows = dimOf(q, 1), depth = dimOf(q, 2);
  const int64_t keys = dimOf(k, 1), width = dimOf(v, 2);
  const int64_t rowTiles = (rows + kRows - 1) / kRows, keyTiles = (keys + kKeys - 1) / kKeys;
  const int64_t qBytes = kRows * depth * 2, kBytes = 2 * kKeys * depth * 2, vBytes = 2 * kKeys * width * 2;
  if (qBytes + kBytes + vBytes > maxSharedBytes)
    return op->emitError("fused attention needs ") << qBytes + kBytes + vBytes
                                                    << " bytes of shared memory; at most " << maxSharedBytes;
  const double minusInf = -std::numeric_limits<double>::infinity();

  OpBuilder b(op);
  Location loc = op.getLoc();
  IndexBuilder ib{b, loc};
  auto workgroup = gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  auto launch = gpu::LaunchOp::create(b, loc, ib.c(rowTiles * batch), ib.c(1), ib.c(1), ib.c(kThreads),
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
  Value n = x.div(blockId, rowTiles), row0 = x.mul(x.rem(blockId, rowTiles), kRows);
  Value lane = x.rem(tid, 32), warpRow = x.mul(x.div(tid, 32), 16);
  // A lane's C-fragment rows: quad (+8); its columns: 2 * inQuad (+1).
  Value quad = x.div(lane, 4), inQuad = x.rem(lane, 4);
  Value rowA = x.add(x.add(row0, warpRow), quad), rowB = x.add(rowA, 8);

  // Key tiles: all, or (causal) up to the one holding the block's last row.
  Value tiles = x.c(keyTiles);
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
  // State: the max and the (lane-partial) sum of rows A and B, then O.
  SmallVector<Value> init{f32(b, loc, minusInf), f32(b, loc, minusInf), f32(b, loc, 0.0),
                          f32(b, loc, 0.0)};
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

        // Scores in base 2 (scale and mask times log2 e, so that ex2 gives
        // the probabilities), masked; the tile's max of rows A and B. Only
        // tiles past the keys' end or (causal) past the warp's first row,
        // or with a mask operand, need the per-element test: the branch is
        // warp-uniform.
        auto scoreTile = [&](OpBuilder &sb, Location sl, bool masked) {
          IndexBuilder z{sb, sl};
          Value scale = f32(sb, sl, op.getScale().convertToDouble() * kLog2e);
          Value minus = f32(sb, sl, minusInf);
          SmallVector<Value> tile2; // [tile j][element e], e in 0..3; then maxA, maxB
          Value maxA = minus, maxB = minus;
          for (int64_t j = 0; j < kKeys / 8; ++j)
            for (int64_t e = 0; e < 4; ++e) {
              Value row = e < 2 ? rowA : rowB;
              Value score = arith::MulFOp::create(
                  sb, sl, vector::ExtractOp::create(sb, sl, s[j], ArrayRef<int64_t>{e}), scale);
              if (masked) {
                Value key = z.add(z.add(z.mul(tile, kKeys), z.mul(inQuad, 2)), j * 8 + e % 2);
                Value keep = z.lt(key, keys);
                if (op.getCausal())
                  keep = z.both(keep, arith::CmpIOp::create(sb, sl, arith::CmpIPredicate::ule, key, row));
                if (mask) {
                  SmallVector<Value> at, ivs{n, row, key};
                  for (auto [d, iv] : llvm::enumerate(ivs)) {
                    int64_t size = dimOf(mask, d);
                    at.push_back(size == 1 ? z.c(0) : z.select(z.lt(iv, size), iv, z.c(0)));
                  }
                  Value m = memref::LoadOp::create(sb, sl, mask, at);
                  if (m.getType().isInteger(1))
                    keep = z.both(keep, m);
                  else
                    score = arith::AddFOp::create(
                        sb, sl, score,
                        arith::MulFOp::create(sb, sl, arith::ExtFOp::create(sb, sl, sb.getF32Type(), m),
                                              f32(sb, sl, kLog2e)));
                }
                score = z.select(keep, score, minus);
              }
              tile2.push_back(score);
              Value &max = e < 2 ? maxA : maxB;
              max = arith::MaximumFOp::create(sb, sl, max, score);
            }
          tile2.append({maxA, maxB});
          return tile2;
        };
        SmallVector<Value> scores;
        if (mask) {
          scores = scoreTile(lb, l, true);
        } else {
          auto above = [&](Value a, Value b) {
            return arith::CmpIOp::create(lb, l, arith::CmpIPredicate::ugt, a, b);
          };
          Value lastKey = y.add(y.mul(tile, kKeys), kKeys - 1);
          Value needsMask = above(lastKey, y.c(keys - 1));
          if (op.getCausal())
            needsMask = arith::OrIOp::create(lb, l, needsMask, above(lastKey, y.add(row0, warpRow)));
          auto branch = scf::IfOp::create(
              lb, l, needsMask,
              [&](OpBuilder &tb, Location tl) { scf::YieldOp::create(tb, tl, scoreTile(tb, tl, true)); },
              [&](OpBuilder &tb, Location tl) { scf::YieldOp::create(tb, tl, scoreTile(tb, tl, false)); });
          scores.assign(branch.getResults().begin(), branch.getResults().end());
        }
        Value maxB = scores.pop_back_val(), maxA = scores.pop_back_val();
        Value minus = f32(lb, l, minusInf);

        // Online softmax per row: a row with no key yet keeps max -inf and
        // subtracts 0 instead, so its probabilities are 0, not NaN.
        SmallVector<Value> newState;
        SmallVector<Value> alphas, shifts;
        for (int64_t r = 0; r < 2; ++r) {
          Value max = arith::MaximumFOp::create(lb, l, state[r], quadReduce(lb, l, r ? maxB : maxA, true));
          Value none = arith::CmpFOp::create(lb, l, arith::CmpFPredicate::OEQ, max, minus);
          Value shift = y.select(none, f32(lb, l, 0.0), max);
          alphas.push_back(exp2(lb, l, arith::SubFOp::create(lb, l, state[r], shift)));
          shifts.push_back(shift);
          newState.push_back(max);
        }
        SmallVector<Value> sums{arith::MulFOp::create(lb, l, state[2], alphas[0]),
                                arith::MulFOp::create(lb, l, state[3], alphas[1])};
        SmallVector<Value> probs; // unrounded: the sums take them so
        for (auto [i, score] : llvm::enumerate(scores)) {
          int64_t r = (i % 4) / 2;
          probs.push_back(exp2(lb, l, arith::SubFOp::create(lb, l, score, shifts[r])));
          sums[r] = arith::AddFOp::create(lb, l, sums[r], probs.back());
        }
        newState.append(sums);

        // O = O * alpha + P V; P's A fragment for keys 16kk..16kk+15 is
        // S tiles 2kk (columns 0-7) and 2kk+1 (8-15), rows A then B.
        Value alphaPairs = vector::FromElementsOp::create(
            lb, l, accType, ValueRange{alphas[0], alphas[0], alphas[1], alphas[1]});
        SmallVector<Value> o;
        for (Value acc : state.drop_front(4))
          o.push_back(arith::MulFOp::create(lb, l, acc, alphaPairs));
        for (int64_t kk = 0; kk < kKeys / 16; ++kk) {
          SmallVector<Value> pFrag;
          for (int64_t j : {2 * kk, 2 * kk + 1})
            for (int64_t e : {0, 2})
              pFrag.push_back(packPair(lb, l, probs[j * 4 + e], probs[j * 4 + e + 1], element));
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

  // out = O / sum (0 / 0 = NaN for a row without keys, as torch gives).
  Value sumA = quadReduce(b, loc, loop.getResult(2), false);
  Value sumB = quadReduce(b, loc, loop.getResult(3), false);
  auto pairType = VectorType::get({2}, b.getF32Type());
  for (int64_t j = 0; j < width / 8; ++j) {
    Value acc = loop.getResult(4 + j);
    Value col = x.add(x.mul(inQuad, 2), j * 8);
    for (int64_t h = 0; h < 2; ++h) {
      Value row = h ? rowB : rowA, sum = h ? sumB : sumA;
      Value pair = vector::ExtractStridedSliceOp::create(b, loc, acc, ArrayRef<int64_t>{2 * h},
                                                         ArrayRef<int64_t>{2}, ArrayRef<int64_t>{1});
      Value o = arith::DivFOp::create(b, loc, pair, vector::BroadcastOp::create(b, loc, pairType, sum));
      o = arith::TruncFOp::create(b, loc, VectorType::get({2}, element), o);
      scf::IfOp::create(b, loc, x.lt(row, rows), [&](OpBuilder &tb, Location l) {
        vector::StoreOp::create(tb, l, o, out, ValueRange{n, row, col});
        scf::YieldOp::create(tb, l);
      });
    }
  }
  gpu::TerminatorOp::create(b, loc);
  // The kernel keeps its sums in registers: the f32 scratch is not needed.
  Value acc = op.getAcc();
  op->erase();
  if (auto alloc = acc.getDefiningOp<memref::AllocOp>(); alloc && alloc->use_empty())
    alloc->erase();
  return success();
}

struct KilnCudaMmaAttentionPass : kiln::impl::KilnCudaMmaAttentionBase<KilnCudaMmaAttentionPass> {
  using KilnCudaMmaAttentionBase::KilnCudaMmaAttentionBase;
  void runOnOperation() override {
    SmallVector<kiln::kernel::AttentionOp> ops;
    getOperation().walk([&](kiln::kernel::AttentionOp op) {
      if (isa<MemRefType>(op.getOut().getType()) && fitsMmaAttention(op))
        ops.push_back(op);
    });
    for (auto op : ops)
      if (failed(buildMmaAttention(op, maxSharedBytes)))
        return signalPassFailure();
  }
};

} // namespace
