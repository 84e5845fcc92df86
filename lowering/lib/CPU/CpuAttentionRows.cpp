//===- CpuAttentionRows.cpp - attention a query row at a time on the CPU --===//
//
// Fewer query rows than a block (a decode step: one query against a key
// cache) gain nothing from packing K, which they read once. A task takes
// one row against K and V where they stand, a span of keys at a time:
// - scores: a vector of keys' dot products as FMAs along the head dim, an
//   accumulator per key, then summed across lanes together (a tree of
//   two-source shuffles and adds leaving key j's score in lane j) rather
//   than one horizontal sum per key;
// - the online softmax on those vectors (one max, one sum and one rescale
//   per span, an exp a lane), the probabilities parked in a scratch row;
// - the row's sums, reloaded times the rescale, take a V row per key with
//   its probability broadcast, in two sets of accumulators taking
//   alternate keys (FMA chains half as long).
// kiln-attention-to-loops took a key at a time: a horizontal sum, a scalar
// exp and the whole row of sums per key.
//
//===----------------------------------------------------------------------===//
#include "CpuAttention.h"

#include "kiln/Lowering/Common/MatmulKernels.h"
#include "kiln/Lowering/Common/Passes.h"
#include "kiln/Lowering/Common/VectorUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>

using namespace mlir;
using kiln::IndexBuilder;

namespace {

/// Vectors of keys a span takes, and the most vectors of a row's sums one
/// pass over a span updates (times two sets of accumulators). (One vector
/// of keys a span on 2 AVX-512 cores: bf16 1x16x1x64 over 2048 keys 0.22
/// ms against 0.13 with two.)
constexpr int64_t kKeyVectors = 2, kWidthVectors = 4;

struct RowBuilder : kiln::AttentionVectors {
  int64_t span = lanes * kKeyVectors;
  Value keys, depth, width;
  // [batch, rows, span] f32: a row's probabilities for a span, rounded to
  // the inputs' type.
  Value scratch;

  /// Lane j: the sum of parts[j]'s lanes (`lanes` parts). At each level,
  /// two vectors holding partial sums of some parts in segments of s lanes
  /// become one holding both's in segments of s / 2 (the first half of
  /// each segment's lanes plus its second half), interleaved; the parts go
  /// in in the order that leaves part j in lane j.
  Value sumsAcrossLanes(OpBuilder &b, ValueRange parts) {
    SmallVector<SmallVector<int64_t>> owners;
    for (int64_t p = 0; p < lanes; ++p)
      owners.push_back({p});
    while (owners.size() > 1) {
      SmallVector<SmallVector<int64_t>> merged;
      for (size_t p = 0; p < owners.size(); p += 2) {
        SmallVector<int64_t> both;
        for (size_t k = 0; k < owners[p].size(); ++k)
          both.append({owners[p][k], owners[p + 1][k]});
        merged.push_back(both);
      }
      owners = merged;
    }
    SmallVector<int64_t> partAt(lanes);
    for (int64_t lane = 0; lane < lanes; ++lane)
      partAt[owners[0][lane]] = lane;
    SmallVector<Value> level;
    for (int64_t p = 0; p < lanes; ++p)
      level.push_back(parts[partAt[p]]);
    for (int64_t s = lanes;; s /= 2) {
      SmallVector<int64_t> firstHalves, secondHalves;
      for (int64_t k = 0; k < lanes / s; ++k)
        for (int64_t from : {int64_t(0), lanes})
          for (int64_t t = 0; t < s / 2; ++t) {
            firstHalves.push_back(from + k * s + t);
            secondHalves.push_back(from + k * s + s / 2 + t);
          }
      SmallVector<Value> next;
      for (size_t p = 0; p < level.size(); p += 2)
        next.push_back(arith::AddFOp::create(
            b, loc, vector::ShuffleOp::create(b, loc, level[p], level[p + 1], firstHalves),
            vector::ShuffleOp::create(b, loc, level[p], level[p + 1], secondHalves)));
      if (next.size() == 1)
        return next.front();
      level = std::move(next);
    }
  }

  /// Lane jj: row i's dot product with key j0 + jj (the last key past it).
  Value dotProducts(OpBuilder &b, Value n, Value i, Value j0) {
    IndexBuilder x{b, loc};
    Value last = arith::SubIOp::create(b, loc, keys, x.c(1));
    SmallVector<Value> at;
    for (int64_t jj = 0; jj < lanes; ++jj)
      at.push_back(arith::MinUIOp::create(b, loc, x.add(j0, jj), last));
    SmallVector<Value> zeros(lanes, splat(b, f32Const(b, 0)));
    auto dot = scf::ForOp::create(
        b, loc, x.c(0), depth, x.c(lanes), zeros,
        [&](OpBuilder &db, Location, Value d, ValueRange sums) {
          Value q = loadVector(db, op.getQ(), {n, i, d});
          SmallVector<Value> next;
          for (int64_t jj = 0; jj < lanes; ++jj)
            next.push_back(vector::FMAOp::create(
                db, loc, q, loadVector(db, op.getK(), {n, at[jj], d}), sums[jj]));
          scf::YieldOp::create(db, loc, next);
        });
    return sumsAcrossLanes(b, dot.getResults());
  }

  /// Query row i of batch n against every key it sees.
  void buildRow(OpBuilder &b, Value n, Value i) {
    IndexBuilder x{b, loc};
    const double minusInf = -std::numeric_limits<double>::infinity();
    Value acc = op.getAcc();
    forEachVector(b, width, 1, [&](OpBuilder &fb, Value w) {
      vector::StoreOp::create(fb, loc, splat(fb, f32Const(fb, 0)), acc, ValueRange{n, i, w});
    });
    // Keys the row sees (causal: query i sees keys 0..i).
    Value end = keys;
    if (op.getCausal())
      end = arith::MinUIOp::create(b, loc, keys, x.add(i, 1));
    Value laneIds = laneIndices(b);
    // Vectors of the sums a pass over a span updates: a power of two
    // dividing V's head dim in vectors, at most kWidthVectors.
    int64_t widthVectors = cast<MemRefType>(op.getV().getType()).getDimSize(2) / lanes;
    int64_t chunk = std::min<int64_t>(kWidthVectors, widthVectors & -widthVectors);
    auto keyLoop = scf::ForOp::create(
        b, loc, x.c(0), end, x.c(span), ValueRange{f32Const(b, minusInf), f32Const(b, 0)},
        [&](OpBuilder &kb, Location, Value j0, ValueRange state) {
          IndexBuilder k{kb, loc};
          SmallVector<Value> s;
          for (int64_t v = 0; v < kKeyVectors; ++v) {
            Value from = v ? k.add(j0, v * lanes) : j0;
            s.push_back(scoresOf(kb, dotProducts(kb, n, i, from), n, i, from, keys, end, laneIds));
          }
          SoftmaxStep step =
              softmaxStep(kb, s, state[0], state[1], [&](OpBuilder &pb, int64_t v, Value p) {
                vector::StoreOp::create(pb, loc, widen(pb, p), scratch,
                                        ValueRange{n, i, k.c(v * lanes)});
              });
          Value alpha = step.alpha;
          // The sums, rescaled as they are loaded, take a V row per key.
          Value count =
              arith::MinUIOp::create(kb, loc, k.c(span), arith::SubIOp::create(kb, loc, end, j0));
          forEachVector(kb, width, chunk, [&](OpBuilder &wb, Value w) {
            IndexBuilder c{wb, loc};
            SmallVector<Value> sums;
            for (int64_t u = 0; u < chunk; ++u)
              sums.push_back(arith::MulFOp::create(
                  wb, loc,
                  vector::LoadOp::create(wb, loc, vec, acc, ValueRange{n, i, c.add(w, u * lanes)}),
                  splat(wb, alpha)));
            auto addKey = [&](OpBuilder &ab, Value jj, MutableArrayRef<Value> into) {
              IndexBuilder a{ab, loc};
              Value p = splat(ab, memref::LoadOp::create(ab, loc, scratch, ValueRange{n, i, jj}));
              for (int64_t u = 0; u < chunk; ++u)
                into[u] = vector::FMAOp::create(
                    ab, loc, p, loadVector(ab, op.getV(), {n, a.add(j0, jj), a.add(w, u * lanes)}),
                    into[u]);
            };
            // A whole span unrolled, alternate keys into two sets; the
            // last keys' span key by key.
            SmallVector<Value> updated = updateSpan(
                wb, count, span, sums,
                [&](OpBuilder &tb) {
                  SmallVector<Value> sets = sums;
                  sets.append(chunk, splat(tb, f32Const(tb, 0)));
                  for (int64_t jj = 0; jj < span; ++jj)
                    addKey(tb, arith::ConstantIndexOp::create(tb, loc, jj),
                           MutableArrayRef<Value>(sets).slice(jj % 2 * chunk, chunk));
                  SmallVector<Value> added;
                  for (int64_t u = 0; u < chunk; ++u)
                    added.push_back(arith::AddFOp::create(tb, loc, sets[u], sets[chunk + u]));
                  return added;
                },
                addKey);
            for (int64_t u = 0; u < chunk; ++u)
              vector::StoreOp::create(wb, loc, updated[u], acc,
                                      ValueRange{n, i, c.add(w, u * lanes)});
          });
          scf::YieldOp::create(kb, loc, ValueRange{step.max, step.total});
        });
    // out = sums / total (outputOf).
    Value noKeys = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, keys, x.c(0));
    forEachVector(b, width, 1, [&](OpBuilder &fb, Value w) {
      Value sum = vector::LoadOp::create(fb, loc, vec, acc, ValueRange{n, i, w});
      vector::StoreOp::create(fb, loc, outputOf(fb, sum, keyLoop.getResult(1), noKeys), op.getOut(),
                              ValueRange{n, i, w});
    });
  }

  void build(OpBuilder &b) {
    Value batch = b.createOrFold<memref::DimOp>(loc, op.getQ(), 0);
    Value rows = b.createOrFold<memref::DimOp>(loc, op.getQ(), 1);
    keys = b.createOrFold<memref::DimOp>(loc, op.getK(), 1);
    depth = b.createOrFold<memref::DimOp>(loc, op.getQ(), 2);
    width = b.createOrFold<memref::DimOp>(loc, op.getV(), 2);
    auto dyn = ShapedType::kDynamic;
    scratch = memref::AllocOp::create(b, loc, MemRefType::get({dyn, dyn, span}, f32),
                                      ValueRange{batch, rows});
    kiln::buildTaskLoop(b, loc, {batch, rows},
                        [&](OpBuilder &pb, ValueRange ivs) { buildRow(pb, ivs[0], ivs[1]); });
    memref::DeallocOp::create(b, loc, scratch);
  }
};

} // namespace

bool kiln::takesAttentionRows(kernel::AttentionOp op, int64_t lanes) {
  if (lanes < 2 || !llvm::isPowerOf2_64(lanes) || !isa<MemRefType>(op.getOut().getType()))
    return false;
  auto q = cast<MemRefType>(op.getQ().getType()), v = cast<MemRefType>(op.getV().getType());
  if (!cast<MemRefType>(op.getAcc().getType()).getElementType().isF32() ||
      !isa<Float32Type, Float16Type, BFloat16Type>(q.getElementType()))
    return false;
  for (int64_t dim : {q.getDimSize(2), v.getDimSize(2)})
    if (ShapedType::isDynamic(dim) || dim % lanes != 0)
      return false;
  return llvm::all_of(ValueRange{op.getQ(), op.getK(), op.getV(), op.getOut(), op.getAcc()},
                      kiln::unitInnerStride);
}

void kiln::buildAttentionRows(OpBuilder &b, kernel::AttentionOp op, int64_t lanes) {
  RowBuilder{AttentionVectors::of(op, lanes)}.build(b);
}
