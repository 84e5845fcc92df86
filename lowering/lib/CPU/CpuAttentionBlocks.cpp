//===- CpuAttentionBlocks.cpp - the kiln-cpu-attention-blocks pass -------===//
//
// kiln-attention-to-loops takes one query row and one key at a time: a dot
// product summed across lanes, a scalar exp and a row of sums per key, at
// about a sixth of the FMA peak. Here a task takes a block of query rows
// against a few vectors of keys at a time, as a matmul micro-kernel
// would: the rows' scores are vectors along the keys (K packed transposed
// once, so a step of the head dim is one vector load and an FMA per row
// with q broadcast), the online softmax runs on those vectors (one max and
// one sum across lanes per row and block, the rescale folded into the
// reload of the row's sums), and the probabilities, parked in a small
// scratch block, are broadcast from memory into the sums' updates, each
// V vector serving every row.
//
// Where AVX512-BF16's dot products beat widening (AMD Zen: HostCpu), bf16
// inputs multiply as pairs (vdpbf16ps: two products a lane into f32): K
// packed as pairs of the head dim, V as pairs of keys, q and the
// probabilities broadcast a pair at a time, half the instructions of
// widening each value to f32.
//
//===----------------------------------------------------------------------===//
#include "CpuAttention.h"
#include "kiln/Lowering/CPU/AttentionTunables.h"
#include "kiln/Lowering/CPU/Passes.h"
#include "kiln/Lowering/Common/MatmulKernels.h"
#include "kiln/Lowering/Common/Passes.h"
#include "kiln/Lowering/Common/Tuned.h"
#include "kiln/Lowering/Common/VectorUtils.h"
#include "kiln/Lowering/Kernels/KernelOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"

#include <limits>

namespace kiln {
#define GEN_PASS_DEF_KILNCPUATTENTIONBLOCKS
#include "kiln/Lowering/CPU/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using kiln::IndexBuilder;

namespace {

/// Whether the blocks take `op`: a block's query rows or more (or a
/// run-time count), f32 sums of f32, f16 or bf16 inputs, V's head dim a
/// static multiple of `lanes`, and V, out and acc contiguous along it.
/// Fewer rows (a decode step) take buildAttentionRows where it takes them;
/// others (f64, odd head dims) stay with kiln-attention-to-loops.
bool takesBlocks(kiln::kernel::AttentionOp op, int64_t lanes) {
  if (lanes < 2 || !isa<MemRefType>(op.getOut().getType()))
    return false;
  auto q = cast<MemRefType>(op.getQ().getType());
  if (!q.isDynamicDim(1) && q.getDimSize(1) < kiln::CpuAttentionTunables{}.rowsPerBlock(lanes))
    return false;
  auto v = cast<MemRefType>(op.getV().getType());
  if (!cast<MemRefType>(op.getAcc().getType()).getElementType().isF32() ||
      !isa<Float32Type, Float16Type, BFloat16Type>(v.getElementType()) || v.isDynamicDim(2) ||
      v.getDimSize(2) % lanes != 0)
    return false;
  return llvm::all_of(ValueRange{op.getV(), op.getOut(), op.getAcc()}, kiln::unitInnerStride);
}

/// Whether bf16 `op` multiplies as pairs (`dotProducts`: the pass option
/// the host's HostCpu::bf16DotProducts sets): 16 lanes, an even static head
/// dim, q and K contiguous along it.
bool takesPairs(kiln::kernel::AttentionOp op, int64_t lanes, bool dotProducts) {
  auto q = cast<MemRefType>(op.getQ().getType());
  return dotProducts && lanes == 16 && q.getElementType().isBF16() && !q.isDynamicDim(2) &&
         q.getDimSize(2) % 2 == 0 && kiln::unitInnerStride(op.getQ()) &&
         kiln::unitInnerStride(op.getK());
}

struct BlockBuilder : kiln::AttentionVectors {
  kiln::CpuAttentionTunables tiling;
  bool pairs; // bf16 products as dot products of pairs (takesPairs)
  int64_t blockRows = tiling.rowsPerBlock(lanes);
  int64_t keyVectors = tiling.keyVectors;
  int64_t span = lanes * keyVectors; // keys a block takes at a time
  Value batch, rows, keys, depth, width;
  // K transposed: [batch, depth, keys rounded up to a span] f32, or with
  // pairs [batch, depth / 2, 2 * keys rounded up] bf16, kt[n, d / 2, 2 j +
  // d % 2] = k[n, j, d].
  Value kt;
  // With pairs, V as pairs of keys: [batch, keys rounded up / 2, 2 * width]
  // bf16, vt[n, j / 2, 2 w + j % 2] = v[n, j, w].
  Value vt;
  // [batch, row blocks, blockRows, span]: probabilities, f32 (bf16 with
  // pairs).
  Value scratch;

  /// kt (see kt), zeros past the last key; a task per span of keys. A
  /// step of the head dim moves one element (f32) or a pair (bf16).
  void packKeys(OpBuilder &b) {
    IndexBuilder x{b, loc};
    int64_t group = pairs ? 2 : 1;
    Type stored = pairs ? element : f32;
    Value blocks = b.createOrFold<arith::CeilDivUIOp>(loc, keys, x.c(span));
    Value steps = b.createOrFold<arith::DivUIOp>(loc, depth, x.c(group));
    auto dyn = ShapedType::kDynamic;
    kt = memref::AllocOp::create(b, loc, MemRefType::get({dyn, dyn, dyn}, stored),
                                 ValueRange{batch, steps, x.mul(blocks, group * span)});
    auto loaded = VectorType::get({group}, element), packed = VectorType::get({group}, stored);
    kiln::buildTaskLoop(b, loc, {batch, blocks}, [&](OpBuilder &pb, ValueRange ivs) {
      IndexBuilder p{pb, loc};
      Value n = ivs[0], j0 = p.mul(ivs[1], span);
      Value last = arith::SubIOp::create(pb, loc, keys, p.c(1));
      Value zeros = arith::ConstantOp::create(pb, loc, packed, pb.getZeroAttr(packed));
      auto perKey = scf::ForOp::create(pb, loc, j0, p.add(j0, span), p.c(1));
      OpBuilder kb = OpBuilder::atBlockBegin(perKey.getBody());
      IndexBuilder k{kb, loc};
      Value j = perKey.getInductionVar();
      Value inside = k.lt(j, keys);
      Value at = arith::MinUIOp::create(kb, loc, j, last);
      scf::ForOp::create(
          kb, loc, k.c(0), steps, k.c(1), ValueRange{},
          [&](OpBuilder &fb, Location, Value d, ValueRange) {
            IndexBuilder f{fb, loc};
            Value e = vector::LoadOp::create(fb, loc, loaded, op.getK(),
                                             ValueRange{n, at, f.mul(d, group)});
            if (loaded != packed)
              e = arith::ExtFOp::create(fb, loc, packed, e);
            e = arith::SelectOp::create(fb, loc, inside, e, zeros);
            vector::StoreOp::create(fb, loc, e, kt, ValueRange{n, d, f.mul(j, group)});
            scf::YieldOp::create(fb, loc);
          });
    });
  }

  /// vt (see vt), zeros past the last key; a task per span of keys.
  void packValuePairs(OpBuilder &b) {
    IndexBuilder x{b, loc};
    Value blocks = b.createOrFold<arith::CeilDivUIOp>(loc, keys, x.c(span));
    auto dyn = ShapedType::kDynamic;
    vt = memref::AllocOp::create(b, loc, MemRefType::get({dyn, dyn, dyn}, element),
                                 ValueRange{batch, x.mul(blocks, span / 2), x.mul(width, 2)});
    auto row = VectorType::get({lanes}, element);
    kiln::buildTaskLoop(b, loc, {batch, blocks}, [&](OpBuilder &pb, ValueRange ivs) {
      IndexBuilder p{pb, loc};
      Value n = ivs[0], first = p.mul(ivs[1], span / 2);
      Value last = arith::SubIOp::create(pb, loc, keys, p.c(1));
      Value zeros = arith::ConstantOp::create(pb, loc, row, pb.getZeroAttr(row));
      auto perPair = scf::ForOp::create(pb, loc, first, p.add(first, span / 2), p.c(1));
      OpBuilder kb = OpBuilder::atBlockBegin(perPair.getBody());
      IndexBuilder k{kb, loc};
      Value j2 = perPair.getInductionVar();
      Value even = k.mul(j2, 2), odd = k.add(even, 1);
      scf::ForOp::create(
          kb, loc, k.c(0), width, k.c(lanes), ValueRange{},
          [&](OpBuilder &fb, Location, Value w, ValueRange) {
            IndexBuilder f{fb, loc};
            auto keyRow = [&](Value j) -> Value {
              Value at = arith::MinUIOp::create(fb, loc, j, last);
              Value values = vector::LoadOp::create(fb, loc, row, op.getV(), ValueRange{n, at, w});
              return arith::SelectOp::create(fb, loc, f.lt(j, keys), values, zeros);
            };
            Value both = vector::InterleaveOp::create(fb, loc, keyRow(even), keyRow(odd));
            vector::StoreOp::create(fb, loc, both, vt, ValueRange{n, j2, f.mul(w, 2)});
            scf::YieldOp::create(fb, loc);
          });
    });
  }

  /// The 32-bit pair of `element`s at `at` of `buffer` in every lane, as
  /// 2 * lanes of them: vdpbf16ps's broadcast operand.
  Value broadcastPair(OpBuilder &b, Value buffer, ValueRange at) {
    Type i32 = b.getI32Type();
    Value pair = vector::LoadOp::create(b, loc, VectorType::get({2}, element), buffer, at);
    Value word = vector::ExtractOp::create(
        b, loc, vector::BitCastOp::create(b, loc, VectorType::get({1}, i32), pair), 0);
    Value words = vector::BroadcastOp::create(b, loc, VectorType::get({lanes}, i32), word);
    return vector::BitCastOp::create(b, loc, VectorType::get({2 * lanes}, element), words);
  }

  /// 2 * lanes `element`s: a vector of pairs.
  VectorType pairVector() { return VectorType::get({2 * lanes}, element); }

  /// sum + the dot products of `a` and `b`'s pairs, a lane each.
  Value dotPairs(OpBuilder &b, Value sum, Value a, Value bPairs) {
    return x86vector::DotBF16Op::create(b, loc, vec, sum, a, bPairs);
  }

  /// Query rows first .. first + count of batch n (their sums in acc, the
  /// probabilities in scratch[n, blk]) against every key they see.
  void buildRows(OpBuilder &b, Value n, Value blk, Value first, int64_t count) {
    IndexBuilder x{b, loc};
    const double minusInf = -std::numeric_limits<double>::infinity();
    Value acc = op.getAcc();
    auto row = [&](int64_t r) { return x.add(first, r); };
    auto forWidth = [&](OpBuilder &ob, function_ref<void(OpBuilder &, Value)> body) {
      forEachVector(ob, width, 1, body);
    };
    forWidth(b, [&](OpBuilder &fb, Value w) {
      for (int64_t r = 0; r < count; ++r)
        vector::StoreOp::create(fb, loc, splat(fb, f32Const(fb, 0)), acc, ValueRange{n, row(r), w});
    });
    // Keys the block's last row sees (causal: query i sees keys 0..i).
    Value end = keys;
    if (op.getCausal())
      end = arith::MinUIOp::create(b, loc, keys, row(count));
    SmallVector<Value> init(count, f32Const(b, minusInf));
    init.append(count, f32Const(b, 0));
    Value laneIds = laneIndices(b);
    auto keyLoop = scf::ForOp::create(
        b, loc, x.c(0), end, x.c(span), init,
        [&](OpBuilder &kb, Location, Value j0, ValueRange state) {
          IndexBuilder k{kb, loc};
          // Scores: `keyVectors` vectors along the keys per row, q broadcast.
          SmallVector<Value> zeros(count * keyVectors, splat(kb, f32Const(kb, 0)));
          // With pairs, a step takes two of the head dim.
          Value steps = pairs ? kb.createOrFold<arith::DivUIOp>(loc, depth, k.c(2)) : depth;
          auto dot = scf::ForOp::create(
              kb, loc, k.c(0), steps, k.c(1), zeros,
              [&](OpBuilder &db, Location, Value d, ValueRange sums) {
                IndexBuilder e{db, loc};
                SmallVector<Value> keyRows;
                for (int64_t v = 0; v < keyVectors; ++v) {
                  Value j = v ? e.add(j0, v * lanes) : j0;
                  keyRows.push_back(
                      pairs ? vector::LoadOp::create(db, loc, pairVector(), kt,
                                                     ValueRange{n, d, e.mul(j, 2)})
                            : vector::LoadOp::create(db, loc, vec, kt, ValueRange{n, d, j}));
                }
                SmallVector<Value> next;
                for (int64_t r = 0; r < count; ++r) {
                  Value q = pairs ? broadcastPair(db, op.getQ(), {n, row(r), e.mul(d, 2)})
                                  : splat(db, widen(db, memref::LoadOp::create(
                                                            db, loc, op.getQ(), {n, row(r), d})));
                  for (int64_t v = 0; v < keyVectors; ++v) {
                    Value sum = sums[r * keyVectors + v];
                    next.push_back(pairs ? dotPairs(db, sum, q, keyRows[v])
                                         : vector::FMAOp::create(db, loc, q, keyRows[v], sum));
                  }
                }
                scf::YieldOp::create(db, loc, next);
              });
          SmallVector<Value> maxima, totals, alphas;
          for (int64_t r = 0; r < count; ++r) {
            Value limit = keys;
            if (op.getCausal())
              limit = arith::MinUIOp::create(kb, loc, keys, k.add(row(r), 1));
            SmallVector<Value> scores;
            for (int64_t v = 0; v < keyVectors; ++v)
              scores.push_back(scoresOf(kb, dot.getResult(r * keyVectors + v), n, row(r),
                                        v ? k.add(j0, v * lanes) : j0, keys, limit, laneIds));
            SoftmaxStep step = softmaxStep(
                kb, scores, state[r], state[count + r], [&](OpBuilder &pb, int64_t v, Value p) {
                  vector::StoreOp::create(pb, loc, pairs ? p : widen(pb, p), scratch,
                                          ValueRange{n, blk, k.c(r), k.c(v * lanes)});
                });
            totals.push_back(step.total);
            maxima.push_back(step.max);
            alphas.push_back(step.alpha);
          }
          // The sums: rescaled as they are loaded, then a V vector per key
          // into every row, its probability broadcast from the scratch.
          Value seenKeys =
              arith::MinUIOp::create(kb, loc, k.c(span), arith::SubIOp::create(kb, loc, keys, j0));
          forWidth(kb, [&](OpBuilder &wb, Value w) {
            SmallVector<Value> sums;
            for (int64_t r = 0; r < count; ++r)
              sums.push_back(arith::MulFOp::create(
                  wb, loc, vector::LoadOp::create(wb, loc, vec, acc, ValueRange{n, row(r), w}),
                  splat(wb, alphas[r])));
            auto addKey = [&](OpBuilder &ab, Value jj, MutableArrayRef<Value> into) {
              IndexBuilder a{ab, loc};
              Value values = loadVector(ab, op.getV(), {n, a.add(j0, jj), w});
              for (int64_t r = 0; r < count; ++r) {
                Value p = memref::LoadOp::create(ab, loc, scratch, ValueRange{n, blk, a.c(r), jj});
                into[r] = vector::FMAOp::create(ab, loc, splat(ab, p), values, into[r]);
              }
            };
            if (pairs) {
              // Every span whole: past the last key, p is 0 and vt zeros.
              Value firstPair = arith::DivUIOp::create(wb, loc, j0, IndexBuilder{wb, loc}.c(2));
              for (int64_t jj = 0; jj < span / 2; ++jj) {
                IndexBuilder a{wb, loc};
                Value values = vector::LoadOp::create(wb, loc, pairVector(), vt,
                                                      ValueRange{n, a.add(firstPair, jj), a.mul(w, 2)});
                for (int64_t r = 0; r < count; ++r)
                  sums[r] = dotPairs(wb, sums[r],
                                     broadcastPair(wb, scratch, {n, blk, a.c(r), a.c(2 * jj)}),
                                     values);
              }
              for (int64_t r = 0; r < count; ++r)
                vector::StoreOp::create(wb, loc, sums[r], acc, ValueRange{n, row(r), w});
              return;
            }
            // Whole blocks unrolled; the last keys' block key by key.
            SmallVector<Value> updated = updateSpan(
                wb, seenKeys, span, sums,
                [&](OpBuilder &tb) {
                  SmallVector<Value> into = sums;
                  for (int64_t jj = 0; jj < span; ++jj)
                    addKey(tb, arith::ConstantIndexOp::create(tb, loc, jj), into);
                  return into;
                },
                addKey);
            for (int64_t r = 0; r < count; ++r)
              vector::StoreOp::create(wb, loc, updated[r], acc, ValueRange{n, row(r), w});
          });
          maxima.append(totals);
          scf::YieldOp::create(kb, loc, maxima);
        });
    // out = sums / total (outputOf).
    Value noKeys = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, keys, x.c(0));
    forWidth(b, [&](OpBuilder &fb, Value w) {
      for (int64_t r = 0; r < count; ++r) {
        Value sum = vector::LoadOp::create(fb, loc, vec, acc, ValueRange{n, row(r), w});
        vector::StoreOp::create(fb, loc, outputOf(fb, sum, keyLoop.getResult(count + r), noKeys),
                                op.getOut(), ValueRange{n, row(r), w});
      }
    });
  }

  /// Replaces `op`. A run-time row count chooses at run time: fewer rows
  /// than a block (a decode step) take buildAttentionRows, which reads K
  /// where it stands (packing it would cost more than the few rows save),
  /// or, where it does not take them, the op itself, moved into that
  /// branch for kiln-attention-to-loops.
  void build() {
    OpBuilder b(op);
    rows = b.createOrFold<memref::DimOp>(loc, op.getQ(), 1);
    if (getConstantIntValue(rows)) {
      buildBlocks(b);
      op->erase();
      return;
    }
    Value enough = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, rows,
                                         arith::ConstantIndexOp::create(b, loc, blockRows));
    auto choice = scf::IfOp::create(b, loc, enough, /*withElseRegion=*/true);
    OpBuilder blocks = choice.getThenBodyBuilder();
    buildBlocks(blocks);
    OpBuilder few = choice.getElseBodyBuilder();
    if (!kiln::takesAttentionRows(op, lanes)) {
      op->moveBefore(choice.elseBlock()->getTerminator());
      return;
    }
    kiln::buildAttentionRows(few, op, lanes);
    op->erase();
  }

  void buildBlocks(OpBuilder &b) {
    IndexBuilder x{b, loc};
    batch = b.createOrFold<memref::DimOp>(loc, op.getQ(), 0);
    keys = b.createOrFold<memref::DimOp>(loc, op.getK(), 1);
    depth = b.createOrFold<memref::DimOp>(loc, op.getQ(), 2);
    width = b.createOrFold<memref::DimOp>(loc, op.getV(), 2);
    packKeys(b);
    if (pairs)
      packValuePairs(b);
    Value rowBlocks = b.createOrFold<arith::CeilDivUIOp>(loc, rows, x.c(blockRows));
    auto dyn = ShapedType::kDynamic;
    scratch = memref::AllocOp::create(
        b, loc, MemRefType::get({dyn, dyn, blockRows, span}, pairs ? element : f32),
        ValueRange{batch, rowBlocks});
    // A block of rows runs over all their keys: a task's worth on its own.
    kiln::buildTaskLoop(b, loc, {batch, rowBlocks}, [&](OpBuilder &pb, ValueRange ivs) {
      IndexBuilder p{pb, loc};
      Value n = ivs[0], blk = ivs[1], first = p.mul(blk, blockRows);
      // A whole block of rows, or the last rows one at a time.
      Value whole =
          arith::CmpIOp::create(pb, loc, arith::CmpIPredicate::ule, p.add(first, blockRows), rows);
      scf::IfOp::create(
          pb, loc, whole,
          [&](OpBuilder &tb, Location) {
            buildRows(tb, n, blk, first, blockRows);
            scf::YieldOp::create(tb, loc);
          },
          [&](OpBuilder &eb, Location) {
            scf::ForOp::create(eb, loc, first, rows, arith::ConstantIndexOp::create(eb, loc, 1),
                               ValueRange{}, [&](OpBuilder &fb, Location, Value i, ValueRange) {
                                 buildRows(fb, n, blk, i, 1);
                                 scf::YieldOp::create(fb, loc);
                               });
            scf::YieldOp::create(eb, loc);
          });
    });
    memref::DeallocOp::create(b, loc, scratch);
    memref::DeallocOp::create(b, loc, kt);
    if (vt)
      memref::DeallocOp::create(b, loc, vt);
  }
};

struct KilnCpuAttentionBlocksPass
    : kiln::impl::KilnCpuAttentionBlocksBase<KilnCpuAttentionBlocksPass> {
  using KilnCpuAttentionBlocksBase::KilnCpuAttentionBlocksBase;
  void runOnOperation() override {
    SmallVector<kiln::kernel::AttentionOp> ops;
    getOperation()->walk([&](kiln::kernel::AttentionOp op) {
      if (takesBlocks(op, vectorWidth) || kiln::takesAttentionRows(op, vectorWidth))
        ops.push_back(op);
    });
    for (auto op : ops) {
      // Fewer static rows than a block.
      if (!takesBlocks(op, vectorWidth)) {
        OpBuilder b(op);
        kiln::buildAttentionRows(b, op, vectorWidth);
        op->erase();
        continue;
      }
      Type element = cast<MemRefType>(op.getQ().getType()).getElementType();
      kiln::CpuAttentionTunables tiling;
      // Tune keys name static sizes; run-time ones take the default.
      auto q = cast<MemRefType>(op.getQ().getType()), v = cast<MemRefType>(op.getV().getType());
      auto k = cast<MemRefType>(op.getK().getType());
      if (q.hasStaticShape() && k.hasStaticShape() && v.hasStaticShape())
        if (auto tuned =
                kiln::tunedConfig(getOperation(), op, kiln::CpuAttentionTunables::tuneSpace(),
                                  "attention", {kiln::tuneDtypeName(element)},
                                  {q.getDimSize(0), q.getDimSize(1), k.getDimSize(1),
                                   q.getDimSize(2), v.getDimSize(2)}))
          tiling = kiln::CpuAttentionTunables::fromConfig(*tuned);
      BlockBuilder{kiln::AttentionVectors::of(op, vectorWidth), tiling,
                   takesPairs(op, vectorWidth, bf16DotProducts)}
          .build();
    }
  }
};

} // namespace
