//===- CpuTileMatmul.cpp - the kiln-cpu-tile-matmul pass -----------------===//
//
// f32 matmuls on buffers become packed, cache-blocked kernels, as BLAS
// libraries build them. One parallel loop runs every batch's tasks, each
// owning a block of at most NC columns of C and a group of its rows, the
// split chosen by a model of packing and balance (splitTasks). For each
// KC-deep slice of k, a task packs its columns of B into NR-column
// micro-panels ([panel][k][NR], each KC x NR for L1), then, MC rows at a
// time, its rows of A into MR-row micro-panels ([panel][k][MR],
// MC x KC for L2), and runs a register-blocked micro-kernel over every
// MR x NR tile of those rows: MR*NV accumulators (NR = NV vectors) live in
// vector registers across the slice, each k step loads NV vectors of B and
// broadcasts MR values of A. Packing pads the panels past M and N with
// zeros, so one micro-kernel serves every tile; a tile at C's edge goes
// through a small scratch tile. The fill of C right before the matmul
// (C = 0) is folded into the first slice's sums, so C is not written
// twice. An elementwise consumer of C right after the matmul (bias,
// activation) runs on the registers of the last slice before the store.
//
// A B that conv's im2col wrote just before the matmul is packed from the
// padded channels-last image instead (implicit GEMM): the patches, 9x the
// image for a 3x3 conv, are never written and read back.
//
// Sizes of run-time size (`?` dims) are values: blocks take their default
// sizes, the task split is computed at run time, and the edge tests are
// emitted unless a static size is a multiple of the tile.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/Common/GatheredOperand.h"
#include "kiln/Lowering/Common/MatmulEpilogue.h"
#include "kiln/Lowering/Common/VectorUtils.h"
#include "kiln/Lowering/CPU/MatmulTunables.h"
#include "kiln/Lowering/Common/Tuned.h"
#include "kiln/Lowering/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>
#include <limits>
#include <numeric>

namespace kiln {
#define GEN_PASS_DEF_KILNCPUTILEMATMUL
#include "kiln/Lowering/CPU/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

struct MatmulOperands {
  Value a, b, c, batch; // batch is null for a plain matmul
  /// An elementwise consumer of C applied before the last store: it writes
  /// its own output (null: store C).
  linalg::GenericOp epilogue;
  /// The value C was filled with right before the matmul: the first k slice
  /// adds it instead of reading C (null: C is read).
  Value filled;
  /// B as its copy's input reads it (conv's patches), where packB reads
  /// that instead of B.
  std::optional<kiln::GatheredOperand> gatheredB;
};

/// Indices of element (i, j) of `matrix` (A, B or C), the batch index first
/// where it has a batch dim (one without is shared by every batch).
SmallVector<Value> at(const MatmulOperands &m, Value matrix, Value i, Value j) {
  if (m.batch && cast<MemRefType>(matrix.getType()).getRank() == 3)
    return {m.batch, i, j};
  return {i, j};
}

/// The problem's sizes (constants where static), whether M and N may not be
/// multiples of the micro-kernel's MR x NR tile (NR = NV vectors of `width`
/// lanes), and a task's block: MC x NC of C, KC of k.
struct Blocking {
  Value m, n, k;
  bool rowEdges, colEdges;
  int64_t mr, nv, width, nr;
  int64_t kc, mc, nc;
  bool edges() const { return rowEdges || colEdges; }
};

/// Index arithmetic at a builder's insertion point.
struct Ix {
  OpBuilder &b;
  Location loc;
  Value c(int64_t v) const { return arith::ConstantIndexOp::create(b, loc, v); }
  Value add(Value x, Value y) const { return b.createOrFold<arith::AddIOp>(loc, x, y); }
  Value add(Value x, int64_t y) const { return add(x, c(y)); }
  Value sub(Value x, Value y) const { return b.createOrFold<arith::SubIOp>(loc, x, y); }
  Value sub(Value x, int64_t y) const { return sub(x, c(y)); }
  Value mul(Value x, Value y) const { return b.createOrFold<arith::MulIOp>(loc, x, y); }
  Value mul(Value x, int64_t y) const { return mul(x, c(y)); }
  Value min(Value x, Value y) const { return b.createOrFold<arith::MinSIOp>(loc, x, y); }
  Value max(Value x, int64_t y) const { return b.createOrFold<arith::MaxSIOp>(loc, x, c(y)); }
  Value ceilDiv(Value x, Value y) const { return b.createOrFold<arith::CeilDivSIOp>(loc, x, y); }
  Value ceilDiv(Value x, int64_t y) const { return ceilDiv(x, c(y)); }
  Value below(Value x, Value bound) const {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, x, bound);
  }
  Value below(Value x, int64_t bound) const { return below(x, c(bound)); }
  Value both(Value x, Value y) const { return arith::AndIOp::create(b, loc, x, y); }
};

/// for (iv = lo; iv < hi; ++iv) body(iv)
void forLoop(OpBuilder &b, Location loc, Value lo, Value hi,
             function_ref<void(OpBuilder &, Value)> body) {
  scf::ForOp::create(b, loc, lo, hi, arith::ConstantIndexOp::create(b, loc, 1), ValueRange{},
                     [&](OpBuilder &lb, Location, Value iv, ValueRange) {
                       body(lb, iv);
                       scf::YieldOp::create(lb, loc);
                     });
}

/// if (cond) then() else otherwise(), without results.
void ifElse(OpBuilder &b, Location loc, Value cond, function_ref<void(OpBuilder &)> then,
            function_ref<void(OpBuilder &)> otherwise) {
  scf::IfOp::create(
      b, loc, cond,
      [&](OpBuilder &tb, Location) {
        then(tb);
        scf::YieldOp::create(tb, loc);
      },
      [&](OpBuilder &eb, Location) {
        otherwise(eb);
        scf::YieldOp::create(eb, loc);
      });
}

/// if (cond) yield then() else yield otherwise(), with results of `types`.
scf::IfOp ifYield(OpBuilder &b, Location loc, TypeRange types, Value cond,
                  function_ref<SmallVector<Value>(OpBuilder &)> then,
                  function_ref<SmallVector<Value>(OpBuilder &)> otherwise) {
  auto op = scf::IfOp::create(b, loc, types, cond, /*withElseRegion=*/true);
  OpBuilder tb = OpBuilder::atBlockEnd(&op.getThenRegion().front());
  scf::YieldOp::create(tb, loc, then(tb));
  OpBuilder eb = OpBuilder::atBlockEnd(&op.getElseRegion().front());
  scf::YieldOp::create(eb, loc, otherwise(eb));
  return op;
}

/// `memref[indices]` where `inBounds`, else 0.
Value loadOrZero(OpBuilder &b, Location loc, Value inBounds, Value memref, ValueRange indices) {
  auto load = ifYield(
      b, loc, TypeRange{b.getF32Type()}, inBounds,
      [&](OpBuilder &tb) -> SmallVector<Value> {
        return {memref::LoadOp::create(tb, loc, memref, indices)};
      },
      [&](OpBuilder &eb) -> SmallVector<Value> {
        return {arith::ConstantOp::create(eb, loc, eb.getF32FloatAttr(0))};
      });
  return load.getResult(0);
}

/// packB of a gathered B whose runs of `width` k are runs of its copy's
/// input (conv's channels-last patches: one pixel's channels): for each
/// vector of a panel, its `width` pixels' runs, loaded as the rows of a
/// square and transposed in registers into `width` k rows of the panel.
/// Columns past N repeat column N - 1: their sums are never stored.
void packGatheredB(OpBuilder &b, Location loc, const MatmulOperands &m, const Blocking &s,
                   Value bp, Value k0, Value kCount, Value j0, Value panels) {
  auto vecType = VectorType::get({s.width}, b.getF32Type());
  Ix x{b, loc};
  Value lastColumn = x.sub(s.n, 1);
  forLoop(b, loc, x.c(0), panels, [&](OpBuilder &qb, Value q) {
    Ix y{qb, loc};
    Value col = y.add(j0, y.mul(q, s.nr));
    scf::ForOp::create(
        qb, loc, y.c(0), kCount, y.c(s.width), ValueRange{},
        [&](OpBuilder &lb, Location, Value p, ValueRange) {
          Ix l{lb, loc};
          Value row = l.add(k0, p);
          for (int64_t v = 0; v < s.nv; ++v) {
            SmallVector<Value> runs;
            for (int64_t lane = 0; lane < s.width; ++lane) {
              Value j = l.add(col, v * s.width + lane);
              if (s.colEdges)
                j = l.min(j, lastColumn);
              auto [input, indices] = m.gatheredB->source(lb, loc, at(m, m.b, row, j));
              runs.push_back(vector::LoadOp::create(lb, loc, vecType, input, indices));
            }
            SmallVector<Value> rows = kiln::transposeInRegisters(lb, loc, std::move(runs));
            for (int64_t i = 0; i < s.width; ++i)
              vector::StoreOp::create(lb, loc, rows[i], bp,
                                      ValueRange{q, l.add(p, i), l.c(v * s.width)});
          }
          scf::YieldOp::create(lb, loc);
        });
  });
}

/// Bp[q][p][0 .. NR) = B[k0 + p][j0 + q*NR ..] for p < kCount and the
/// task's `panels` column panels; columns past N are zero.
void packB(OpBuilder &b, Location loc, const MatmulOperands &m, const Blocking &s, Value bp,
           Value k0, Value kCount, Value j0, Value panels) {
  if (m.gatheredB) {
    packGatheredB(b, loc, m, s, bp, k0, kCount, j0, panels);
    return;
  }
  auto vecType = VectorType::get({s.width}, b.getF32Type());
  Ix x{b, loc};
  forLoop(b, loc, x.c(0), kCount, [&](OpBuilder &pb, Value p) {
    Ix y{pb, loc};
    Value row = y.add(k0, p);
    forLoop(pb, loc, y.c(0), panels, [&](OpBuilder &qb, Value q) {
      Ix z{qb, loc};
      Value col = z.add(j0, z.mul(q, s.nr));
      auto copyVectors = [&](OpBuilder &vb) {
        Ix w{vb, loc};
        for (int64_t v = 0; v < s.nv; ++v) {
          Value vec = vector::LoadOp::create(vb, loc, vecType, m.b, at(m, m.b, row, w.add(col, v * s.width)));
          vector::StoreOp::create(vb, loc, vec, bp, ValueRange{q, p, w.c(v * s.width)});
        }
      };
      if (!s.colEdges)
        return copyVectors(qb);
      ifElse(qb, loc, z.below(col, z.sub(s.n, s.nr - 1)), copyVectors, [&](OpBuilder &eb) {
        Ix w{eb, loc};
        forLoop(eb, loc, w.c(0), w.c(s.nr), [&](OpBuilder &lb, Value jj) {
          Ix l{lb, loc};
          Value j = l.add(col, jj);
          Value value = loadOrZero(lb, loc, l.below(j, s.n), m.b, at(m, m.b, row, j));
          memref::StoreOp::create(lb, loc, value, bp, ValueRange{q, p, jj});
        });
      });
    });
  });
}

/// Ap[q][p][r] = A[i0 + q*MR + r][k0 + p] for p < kCount and the task's
/// `panels` row panels; rows past M are zero. Where A's rows are
/// contiguous, `width` k at a time: a vector of each row, interleaved by
/// one shuffle into the panel's MR x width run (LLVM builds it of
/// two-source permutes: a scalar copy per element was half of packing's
/// time); the k past the last whole vector one by one.
void packA(OpBuilder &b, Location loc, const MatmulOperands &m, const Blocking &s, Value ap,
           Value k0, Value kCount, Value i0, Value panels) {
  Ix x{b, loc};
  const int64_t width = s.width, mr = s.mr;
  auto rowType = VectorType::get({width}, b.getF32Type());
  Value zero = arith::ConstantOp::create(b, loc, rowType, DenseElementsAttr::get(rowType, 0.0f));
  // Ap as [panel][k * MR]: the interleaved run is one contiguous store.
  Value flat = memref::CollapseShapeOp::create(b, loc, ap,
                                               SmallVector<ReassociationIndices>{{0}, {1, 2}});
  // The rows (zeros up to a power of two of them) concatenated pairwise,
  // then interleaved: lane p * MR + r of the run is lane p of row r.
  auto interleave = [&](OpBuilder &ib, SmallVector<Value> parts) -> Value {
    parts.resize(llvm::PowerOf2Ceil(parts.size()), zero);
    for (int64_t n = width; parts.size() > 1; n *= 2) {
      SmallVector<int64_t> both(2 * n);
      std::iota(both.begin(), both.end(), 0);
      SmallVector<Value> next;
      for (size_t i = 0; i < parts.size(); i += 2)
        next.push_back(vector::ShuffleOp::create(ib, loc, parts[i], parts[i + 1], both));
      parts = std::move(next);
    }
    SmallVector<int64_t> mask(mr * width);
    for (int64_t p = 0; p < width; ++p)
      for (int64_t r = 0; r < mr; ++r)
        mask[p * mr + r] = r * width + p;
    return vector::ShuffleOp::create(ib, loc, parts[0], parts[0], mask);
  };
  const bool vectors = kiln::unitInnerStride(m.a);
  forLoop(b, loc, x.c(0), panels, [&](OpBuilder &qb, Value q) {
    Ix y{qb, loc};
    Value row0 = y.add(i0, y.mul(q, mr));
    Value whole = x.c(0);
    if (vectors) {
      // kCount rounded down to whole vectors.
      whole = y.mul(qb.createOrFold<arith::DivSIOp>(loc, kCount, y.c(width)), width);
      scf::ForOp::create(
          qb, loc, y.c(0), whole, y.c(width), ValueRange{},
          [&](OpBuilder &lb, Location, Value p, ValueRange) {
            Ix l{lb, loc};
            SmallVector<Value> rows;
            for (int64_t r = 0; r < mr; ++r) {
              Value row = l.add(row0, r);
              auto load = [&](OpBuilder &vb) -> SmallVector<Value> {
                return {vector::LoadOp::create(vb, loc, rowType, m.a,
                                               at(m, m.a, row, Ix{vb, loc}.add(k0, p)))};
              };
              rows.push_back(s.rowEdges ? ifYield(lb, loc, TypeRange{rowType},
                                                  l.below(row, s.m), load,
                                                  [&](OpBuilder &) -> SmallVector<Value> {
                                                    return {zero};
                                                  })
                                              .getResult(0)
                                        : load(lb)[0]);
            }
            vector::StoreOp::create(lb, loc, interleave(lb, rows), flat,
                                    ValueRange{q, l.mul(p, mr)});
            scf::YieldOp::create(lb, loc);
          });
    }
    for (int64_t r = 0; r < mr; ++r) {
      Value row = y.add(row0, r);
      auto fill = [&](OpBuilder &fb, bool zeros) {
        forLoop(fb, loc, whole, kCount, [&](OpBuilder &lb, Value p) {
          Value value =
              zeros ? arith::ConstantOp::create(lb, loc, lb.getF32FloatAttr(0)).getResult()
                    : memref::LoadOp::create(lb, loc, m.a, at(m, m.a, row, Ix{lb, loc}.add(k0, p)))
                          .getResult();
          memref::StoreOp::create(lb, loc, value, ap, ValueRange{q, p, Ix{lb, loc}.c(r)});
        });
      };
      if (!s.rowEdges) {
        fill(qb, false);
        continue;
      }
      ifElse(qb, loc, y.below(row, s.m), [&](OpBuilder &tb) { fill(tb, false); },
             [&](OpBuilder &eb) { fill(eb, true); });
    }
  });
}

/// Stores `acc` (a vector of `width` lanes, or a scalar for 0) as C[i, j..],
/// or, with an epilogue and on the last slice, the epilogue's value at
/// [i, j..] into its output.
void storeResult(OpBuilder &b, Location loc, const MatmulOperands &m, bool throughEpilogue,
                 Value acc, Value i, Value j, int64_t width) {
  if (throughEpilogue)
    return kiln::storeThroughEpilogue(b, loc, m.epilogue, m.c, acc, at(m, m.c, i, j), width);
  if (width)
    vector::StoreOp::create(b, loc, acc, m.c, at(m, m.c, i, j));
  else
    memref::StoreOp::create(b, loc, acc, m.c, at(m, m.c, i, j));
}

/// C[i .. i+MR, j .. j+NR) += Ap[ap panel] * Bp[bp panel] over kCount k
/// steps, through `scratch` (an MR x NR tile) where the tile crosses C's
/// edge. The sums start from zero and C is added at the end: its lines,
/// prefetched first, arrive while the k loop runs. `first`: whether this is
/// the first k slice, which adds C's fill value instead (null: every slice
/// is, when there is a fill). `last`: whether this is the k slice after
/// which the epilogue runs (null: every slice is, or there is no epilogue).
void emitMicroTile(OpBuilder &b, Location loc, const MatmulOperands &m, const Blocking &s,
                   Value ap, Value aPanel, Value bp, Value bPanel, Value scratch, Value i,
                   Value j, Value kCount, Value first, Value last) {
  auto vecType = VectorType::get({s.width}, b.getF32Type());
  Ix x{b, loc};
  SmallVector<Value> rowOf, colOf;
  for (int64_t r = 0; r < s.mr; ++r)
    rowOf.push_back(x.add(i, r));
  for (int64_t v = 0; v < s.nv; ++v)
    colOf.push_back(x.add(j, v * s.width));
  // Prefetch C's lines, within C: an edge tile's rows and columns clamped.
  // A fused matmul of one slice whose fill is folded never touches C.
  bool touchesC = !(m.filled && !first && m.epilogue && !last);
  for (int64_t r = 0; r < s.mr && touchesC; ++r)
    for (int64_t v = 0; v < s.nv; ++v) {
      Value row = rowOf[r], col = colOf[v];
      if (s.edges()) {
        row = x.min(row, x.sub(s.m, 1));
        col = x.min(col, x.sub(s.n, 1));
      }
      memref::PrefetchOp::create(b, loc, m.c, at(m, m.c, row, col), /*isWrite=*/true,
                                 /*localityHint=*/3, /*isDataCache=*/true);
    }
  Value zero = arith::ConstantOp::create(b, loc, vecType, DenseElementsAttr::get(vecType, 0.0f));
  SmallVector<Value> init(s.mr * s.nv, zero);
  auto loop = scf::ForOp::create(
      b, loc, x.c(0), kCount, x.c(1), init,
      [&](OpBuilder &lb, Location, Value p, ValueRange acc) {
        Ix l{lb, loc};
        SmallVector<Value> bRow;
        for (int64_t v = 0; v < s.nv; ++v)
          bRow.push_back(vector::LoadOp::create(lb, loc, vecType, bp,
                                                ValueRange{bPanel, p, l.c(v * s.width)}));
        SmallVector<Value> next;
        for (int64_t r = 0; r < s.mr; ++r) {
          Value ar = memref::LoadOp::create(lb, loc, ap, ValueRange{aPanel, p, l.c(r)});
          Value splat = vector::BroadcastOp::create(lb, loc, vecType, ar);
          for (int64_t v = 0; v < s.nv; ++v)
            next.push_back(vector::FMAOp::create(lb, loc, splat, bRow[v], acc[r * s.nv + v]));
        }
        scf::YieldOp::create(lb, loc, next);
      });
  ValueRange acc = loop.getResults();
  // C's value at [ci, cj..] (a vector of `width` lanes, or a scalar for 0).
  auto cValue = [&](OpBuilder &cb, Value ci, Value cj, int64_t width) -> Value {
    Type type = width ? Type(vecType) : cb.getF32Type();
    auto load = [&](OpBuilder &lb) -> SmallVector<Value> {
      if (width)
        return {vector::LoadOp::create(lb, loc, vecType, m.c, at(m, m.c, ci, cj))};
      return {memref::LoadOp::create(lb, loc, m.c, at(m, m.c, ci, cj))};
    };
    auto fillValue = [&](OpBuilder &fb) -> SmallVector<Value> {
      if (width)
        return {vector::BroadcastOp::create(fb, loc, vecType, m.filled)};
      return {m.filled};
    };
    if (!m.filled)
      return load(cb).front();
    if (!first)
      return fillValue(cb).front();
    return ifYield(cb, loc, TypeRange{type}, first, fillValue, load).getResult(0);
  };
  // Stores the tile into C, or through the epilogue after the last slice.
  auto storeTile = [&](OpBuilder &sb, function_ref<void(OpBuilder &, bool)> store) {
    if (!last)
      return store(sb, bool(m.epilogue));
    ifElse(sb, loc, last, [&](OpBuilder &tb) { store(tb, true); },
           [&](OpBuilder &eb) { store(eb, false); });
  };
  auto storeFull = [&](OpBuilder &fb) {
    SmallVector<Value> sums;
    for (int64_t r = 0; r < s.mr; ++r)
      for (int64_t v = 0; v < s.nv; ++v)
        sums.push_back(arith::AddFOp::create(fb, loc, cValue(fb, rowOf[r], colOf[v], s.width),
                                             acc[r * s.nv + v]));
    storeTile(fb, [&](OpBuilder &tb, bool epilogue) {
      for (int64_t r = 0; r < s.mr; ++r)
        for (int64_t v = 0; v < s.nv; ++v)
          storeResult(tb, loc, m, epilogue, sums[r * s.nv + v], rowOf[r], colOf[v], s.width);
    });
  };
  if (!s.edges())
    return storeFull(b);
  Value full = x.both(x.below(i, x.sub(s.m, s.mr - 1)), x.below(j, x.sub(s.n, s.nr - 1)));
  ifElse(b, loc, full, storeFull, [&](OpBuilder &eb) {
    Ix e{eb, loc};
    for (int64_t r = 0; r < s.mr; ++r)
      for (int64_t v = 0; v < s.nv; ++v)
        vector::StoreOp::create(eb, loc, acc[r * s.nv + v], scratch,
                                ValueRange{e.c(r), e.c(v * s.width)});
    // C's elements of the tile, one by one.
    storeTile(eb, [&](OpBuilder &tb, bool epilogue) {
      Ix t{tb, loc};
      forLoop(tb, loc, t.c(0), t.c(s.mr), [&](OpBuilder &rb, Value r) {
        forLoop(rb, loc, t.c(0), t.c(s.nr), [&](OpBuilder &cb, Value jj) {
          Ix l{cb, loc};
          Value ci = l.add(i, r), cj = l.add(j, jj);
          Value inside = l.both(l.below(ci, s.m), l.below(cj, s.n));
          scf::IfOp::create(cb, loc, inside, [&](OpBuilder &ib, Location) {
            Value sum = arith::AddFOp::create(
                ib, loc, cValue(ib, ci, cj, 0),
                memref::LoadOp::create(ib, loc, scratch, ValueRange{r, jj}));
            storeResult(ib, loc, m, epilogue, sum, ci, cj, 0);
            scf::YieldOp::create(ib, loc);
          });
        });
      });
    });
  });
}

/// One task: C[i0 .. i0+rows, j0 .. j0+cols) += A * B, cols <= NC. For
/// each slice of k it packs its columns of B once, then, MC rows at a time,
/// its rows of A, and sweeps the micro-kernel over them.
void emitTask(OpBuilder &b, Location loc, const MatmulOperands &m, const Blocking &s, Value i0,
              Value rows, Value j0, Value cols) {
  Ix x{b, loc};
  Type f32 = b.getF32Type();
  auto aligned = b.getI64IntegerAttr(64);
  Value ap = memref::AllocOp::create(b, loc, MemRefType::get({s.mc / s.mr, s.kc, s.mr}, f32),
                                     aligned);
  Value bp = memref::AllocOp::create(b, loc, MemRefType::get({s.nc / s.nr, s.kc, s.nr}, f32),
                                     aligned);
  Value scratch;
  if (s.edges())
    scratch = memref::AllocaOp::create(b, loc, MemRefType::get({s.mr, s.nr}, f32));
  Value bPanels = x.ceilDiv(cols, s.nr);
  Value rowBlocks = x.ceilDiv(rows, s.mc);
  // At least one slice: with k = 0, it stores C's fill value (or C).
  Value slices = x.max(x.ceilDiv(s.k, s.kc), 1);
  std::optional<int64_t> staticSlices = getConstantIntValue(slices);
  forLoop(b, loc, x.c(0), slices, [&](OpBuilder &kb, Value slice) {
    Ix y{kb, loc};
    Value k0 = y.mul(slice, s.kc);
    Value kCount = y.min(y.c(s.kc), y.sub(s.k, k0));
    Value first, last;
    if (m.filled && staticSlices != 1)
      first = arith::CmpIOp::create(kb, loc, arith::CmpIPredicate::eq, slice, y.c(0));
    if (m.epilogue && staticSlices != 1)
      last = arith::CmpIOp::create(kb, loc, arith::CmpIPredicate::eq, slice, y.sub(slices, 1));
    packB(kb, loc, m, s, bp, k0, kCount, j0, bPanels);
    forLoop(kb, loc, y.c(0), rowBlocks, [&](OpBuilder &rb, Value block) {
      Ix z{rb, loc};
      Value offset = z.mul(block, s.mc);
      Value blockRow = z.add(i0, offset);
      Value aPanels = z.ceilDiv(z.min(z.c(s.mc), z.sub(rows, offset)), s.mr);
      packA(rb, loc, m, s, ap, k0, kCount, blockRow, aPanels);
      forLoop(rb, loc, z.c(0), bPanels, [&](OpBuilder &jb, Value jp) {
        Ix w{jb, loc};
        Value j = w.add(j0, w.mul(jp, s.nr));
        forLoop(jb, loc, w.c(0), aPanels, [&](OpBuilder &ib, Value ip) {
          Ix v{ib, loc};
          emitMicroTile(ib, loc, m, s, ap, ip, bp, jp, scratch, v.add(blockRow, v.mul(ip, s.mr)),
                        j, kCount, first, last);
        });
      });
    });
  });
  memref::DeallocOp::create(b, loc, ap);
  memref::DeallocOp::create(b, loc, bp);
}

int64_t roundUp(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

/// Each batch's C as `rowGroups` groups of `groupRows` rows (the last may be
/// short) times `colBlocks` blocks of its `panels` NR-column panels.
struct TaskSplit {
  int64_t rowGroups, groupRows, colBlocks, panels;
};

/// What packing an element of A or B costs against one multiply-add of the
/// micro-kernel: the packed element is read from L3 or memory, where the
/// micro-kernel's operands come from L1 and L2.
constexpr double kPackCostInFmas = 32;

/// The split of static M x N (times `batches`) over `threads` with the
/// least modelled time: tasks run in rounds of `threads`, and the longest
/// task, of R rows and C columns, packs its R x K of A and K x C of B and
/// multiplies them, R*C*K + kPackCostInFmas*(R + C)*K (K, common to every
/// split, is left out). So a matmul of few rows is split by columns alone
/// (its B packed once, not once per row group), a square one both ways.
TaskSplit splitTasks(int64_t m, int64_t n, int64_t batches, const Blocking &s, int64_t threads) {
  m = std::max<int64_t>(m, 1);
  n = std::max<int64_t>(n, 1);
  int64_t panels = llvm::divideCeil(n, s.nr);
  int64_t fewestBlocks = llvm::divideCeil(panels, s.nc / s.nr);
  TaskSplit best{1, roundUp(m, s.mr), fewestBlocks, panels};
  double bestTime = std::numeric_limits<double>::infinity();
  // A few rounds more than the fewest blocks balance any task count (and
  // keep the search short for a wide C).
  int64_t mostBlocks = std::min(panels, fewestBlocks + 2 * threads);
  for (int64_t blocks = fewestBlocks; blocks <= mostBlocks; ++blocks) {
    // More groups than MR-row panels are the same split.
    for (int64_t groups = 1; groups <= std::min<int64_t>(threads, llvm::divideCeil(m, s.mr));
         ++groups) {
      int64_t groupRows = roundUp(llvm::divideCeil(m, groups), s.mr);
      int64_t rowGroups = llvm::divideCeil(m, groupRows);
      int64_t rows = std::min(groupRows, m);
      int64_t cols = std::min<int64_t>(llvm::divideCeil(panels, blocks) * s.nr, n);
      // In doubles: the products of sizes may not fit 64 bits.
      double rounds = std::ceil(double(batches) * double(rowGroups * blocks) / double(threads));
      double time = rounds * (double(rows) * double(cols) + kPackCostInFmas * double(rows + cols));
      if (time < bestTime) {
        bestTime = time;
        best = {rowGroups, groupRows, blocks, panels};
      }
    }
  }
  return best;
}

/// The most rows of A that rowsTimesMatrix takes.
constexpr int64_t kMaxStreamedRows = 4;

/// The most slices of K that rowsTimesMatrix splits a matmul into, the
/// fewest rows of B a slice takes, and the fewest rows of A it splits for.
/// (On 2 AVX-512 cores, 8 processes each, medians: 3x4096 @ 4096x1024 0.91
/// -> 0.48 ms, 4 rows 1.21 -> 0.48, 4 rows times 4096x2048 1.61 either way;
/// 1 and 2 rows 0.24 -> 0.28 and 0.33 -> 0.42 ms, the fill of the partials
/// and their sum costing more than blocks of 2 KiB of a row.)
constexpr int64_t kMaxKSlices = 16;
constexpr int64_t kMinKSliceRows = 256;
constexpr int64_t kMinSlicedRowsOfA = 3;

/// How many slices of K (a power of two dividing `k`) a few rows times a
/// k x n matrix takes, so that slices times kiln-vectorize's column blocks
/// give every thread a task of whole blocks. Without slices, 4096 columns
/// on 16 threads were 16 blocks of 1 KiB of every row of B (4x4096 @
/// 4096^2 at 1.03 ms against torch's 0.53 on a 16-core Xeon, twice the
/// gemv's time), and narrow blocks with 3 or 4 rows of A measure slow on
/// 2 cores too (below).
int64_t kSlices(int64_t k, int64_t n, int64_t threads) {
  int64_t blocks = llvm::divideCeil(n * int64_t(sizeof(float)), kiln::kColumnBlockBytes);
  int64_t slices = 1;
  while (slices * blocks < threads && slices < kMaxKSlices && k % (2 * slices) == 0 &&
         k / (2 * slices) >= kMinKSliceRows)
    slices *= 2;
  return slices;
}

/// A matmul of up to kMaxStreamedRows static rows (a gemv, a decode step
/// of a few sequences) as a linalg.generic with k outside n: a reduction
/// over outer loops, which kiln-vectorize runs in blocks of B's columns,
/// each taking B's rows in order (the rows of A inside), reading B once.
/// Tiled, the rows filled part of the micro-kernel's MR rows and B was
/// packed (copied) first: 3.6 ms for 1x4096 @ 4096^2 against 3.0 in
/// torch; with 4 rows, 1.9 ms against torch's 0.37 on 16 cores.
/// With too few column blocks for the threads, K is split into kSlices
/// slices, each summed into its own partial C, and the partials then
/// added to C.
LogicalResult rowsTimesMatrix(linalg::LinalgOp op, RewriterBase &rewriter, int64_t threads) {
  unsigned loops = op.getNumLoops(); // [batch,] m, n, k
  Value cm = op.getDpsInits()[0];
  auto cType = cast<MemRefType>(cm.getType());
  int64_t rows = cType.getDimSize(cType.getRank() - 2);
  if (ShapedType::isDynamic(rows) || rows < 1 || rows > kMaxStreamedRows)
    return failure();
  MLIRContext *ctx = rewriter.getContext();
  // New loop order [batch,] m, k, n: old n is the new last, old k before it.
  SmallVector<AffineExpr> oldDims;
  for (unsigned d = 0; d < loops; ++d)
    oldDims.push_back(getAffineDimExpr(d, ctx));
  std::swap(oldDims[loops - 1], oldDims[loops - 2]);
  auto reorder = AffineMap::get(loops, 0, oldDims, ctx);
  SmallVector<AffineMap> maps;
  for (AffineMap map : op.getIndexingMapsArray())
    maps.push_back(map.compose(reorder));
  // B and C read along n as rows; anything else keeps the tiled kernel.
  for (OpOperand *operand : {op.getDpsInputOperand(1), op.getDpsInitOperand(0)})
    if (kiln::classify(maps[operand->getOperandNumber()], operand->get(), loops - 1) !=
        kiln::Access::Vector)
      return failure();
  // Fused, as the micro-kernel's products are.
  auto fma = [](OpBuilder &b, Location loc, ValueRange args) {
    linalg::YieldOp::create(b, loc,
                            math::FmaOp::create(b, loc, args[0], args[1], args[2]).getResult());
  };
  SmallVector<utils::IteratorType> iterators(loops, utils::IteratorType::parallel);
  iterators[loops - 2] = utils::IteratorType::reduction;
  Value am = op.getDpsInputs()[0], bm = op.getDpsInputs()[1];
  auto aType = cast<MemRefType>(am.getType()), bType = cast<MemRefType>(bm.getType());
  int64_t k = aType.getDimSize(1), n = cType.getDimSize(1);
  int64_t slices =
      isa<linalg::MatmulOp>(op) && rows >= kMinSlicedRowsOfA && aType.hasStaticShape() &&
              bType.hasStaticShape() && cType.hasStaticShape() &&
              op.getIndexingMapsArray() == linalg::MatmulOp::getDefaultIndexingMaps(ctx)
          ? kSlices(k, n, threads)
          : 1;
  int64_t sliceRows = k / slices;
  SmallVector<int64_t> aShape{rows, slices, sliceRows}, bShape{slices, sliceRows, n};
  SmallVector<ReassociationIndices> aDims{{0}, {1, 2}}, bDims{{0, 1}, {2}};
  // Layouts that cannot be split so take one slice.
  if (failed(memref::ExpandShapeOp::computeExpandedType(aType, aShape, aDims)) ||
      failed(memref::ExpandShapeOp::computeExpandedType(bType, bShape, bDims)))
    slices = 1;
  if (slices == 1) {
    rewriter.replaceOpWithNewOp<linalg::GenericOp>(op, TypeRange{}, op.getDpsInputs(),
                                                   op.getDpsInits(), maps, iterators, fma);
    return success();
  }
  // A as [m, slices, k / slices], B as [slices, k / slices, n], partial Cs
  // as [slices, m, n], over loops (slice, m, k in the slice, n).
  Location loc = op.getLoc();
  Value aSlices = memref::ExpandShapeOp::create(rewriter, loc, aShape, am, aDims);
  Value bSlices = memref::ExpandShapeOp::create(rewriter, loc, bShape, bm, bDims);
  AffineExpr slice = getAffineDimExpr(0, ctx), m = getAffineDimExpr(1, ctx),
             kIn = getAffineDimExpr(2, ctx), col = getAffineDimExpr(3, ctx);
  SmallVector<AffineMap> sliceMaps{AffineMap::get(4, 0, {m, slice, kIn}, ctx),
                                   AffineMap::get(4, 0, {slice, kIn, col}, ctx),
                                   AffineMap::get(4, 0, {slice, m, col}, ctx)};
  auto partialType = MemRefType::get({slices, rows, n}, rewriter.getF32Type());
  // 64-byte aligned, so that kiln-vectorize's loads of a row are.
  Value partials =
      memref::AllocOp::create(rewriter, loc, partialType, rewriter.getI64IntegerAttr(64));
  Value zero = arith::ConstantOp::create(rewriter, loc, rewriter.getF32FloatAttr(0));
  linalg::FillOp::create(rewriter, loc, zero, partials);
  linalg::GenericOp::create(rewriter, loc, TypeRange{}, ValueRange{aSlices, bSlices},
                            ValueRange{partials}, sliceMaps,
                            {utils::IteratorType::parallel, utils::IteratorType::parallel,
                             utils::IteratorType::reduction, utils::IteratorType::parallel},
                            fma);
  // C += the partials' sum, over loops (slice, m, n).
  AffineExpr n3 = getAffineDimExpr(2, ctx);
  SmallVector<AffineMap> sumMaps{AffineMap::get(3, 0, {slice, m, n3}, ctx),
                                 AffineMap::get(3, 0, {m, n3}, ctx)};
  linalg::GenericOp::create(
      rewriter, loc, TypeRange{}, ValueRange{partials}, ValueRange{cm}, sumMaps,
      {utils::IteratorType::reduction, utils::IteratorType::parallel,
       utils::IteratorType::parallel},
      [](OpBuilder &b, Location l, ValueRange args) {
        linalg::YieldOp::create(b, l, arith::AddFOp::create(b, l, args[0], args[1]).getResult());
      });
  memref::DeallocOp::create(rewriter, loc, partials);
  rewriter.eraseOp(op);
  return success();
}

/// An f32 matmul on buffers (`op`) as the tiled kernel, or as
/// rowsTimesMatrix's generic; other matmuls are left as they are. (Not a
/// rewrite pattern: a gathered B's copy and buffer go too, which a greedy
/// driver's worklist may hold.)
struct TileF32Matmul {
  int64_t width, threads;

  void rewrite(linalg::LinalgOp op, RewriterBase &rewriter) const {
    if (!op.hasPureBufferSemantics() || !kiln::readsOperandsInPlace(op))
      return;
    Value a = op.getDpsInputs()[0], bm = op.getDpsInputs()[1],
          cm = op.getDpsInits()[0];
    bool runTimeSizes = false;
    for (Value v : {a, bm, cm}) {
      auto type = cast<MemRefType>(v.getType());
      if (!type.getElementType().isF32())
        return;
      runTimeSizes |= !type.hasStaticShape();
    }
    if (!kiln::unitInnerStride(bm) || !kiln::unitInnerStride(cm))
      return;
    if (succeeded(rowsTimesMatrix(op, rewriter, threads)))
      return;
    // A fill of C right before the matmul (C = 0 for a plain product) is
    // folded into the first slice's sums, saving a pass over C. (Looked up
    // before anything is built in between.)
    auto fill = dyn_cast_or_null<linalg::FillOp>(op->getPrevNode());
    if (fill && (!fill.hasPureBufferSemantics() || fill.getDpsInits()[0] != cm ||
                 !fill.getInputs()[0].getType().isF32()))
      fill = nullptr;
    linalg::GenericOp epilogue = kiln::findMatmulEpilogue(op, cm);
    bool batched = isa<linalg::BatchMatmulOp>(op);
    Location loc = op.getLoc();
    Ix x{rewriter, loc};
    auto size = [&](Value v, int64_t d) {
      return getValueOrCreateConstantIndexOp(rewriter, loc,
                                             memref::getMixedSize(rewriter, loc, v, d));
    };
    int64_t cRank = cast<MemRefType>(cm.getType()).getRank();
    kiln::CpuMatmulTunables tiling;
    // Tune keys name static sizes; run-time ones take the defaults.
    if (!runTimeSizes)
      if (auto tuned = kiln::tunedMatmulConfig(op, kiln::CpuMatmulTunables::tuneSpace()))
        tiling = kiln::CpuMatmulTunables::fromConfig(*tuned);
    Blocking s;
    s.m = size(cm, cRank - 2);
    s.n = size(cm, cRank - 1);
    s.k = size(a, cast<MemRefType>(a.getType()).getRank() - 1);
    s.mr = tiling.rows;
    s.nv = tiling.vectorsPerRow(width);
    s.width = width;
    s.nr = s.nv * width;
    std::optional<int64_t> m = getConstantIntValue(s.m), n = getConstantIntValue(s.n),
                           k = getConstantIntValue(s.k);
    s.rowEdges = !m || *m % s.mr;
    s.colEdges = !n || *n % s.nr;
    // Blocks no larger than a static problem: small matmuls pack small
    // buffers.
    s.kc = k ? std::clamp<int64_t>(*k, 1, tiling.kBlock) : tiling.kBlock;
    s.mc = roundUp(tiling.blockRows, s.mr);
    s.nc = roundUp(tiling.blockCols, s.nr);
    if (m)
      s.mc = std::min(s.mc, roundUp(std::max<int64_t>(*m, 1), s.mr));
    // Packed from the image where every step of `width` k is a run of a
    // pixel's channels (slices start at multiples of KC), transposed as
    // squares of a power-of-two side.
    std::optional<kiln::GatheredOperand> gathered = kiln::findGatheredOperand(op, bm);
    if (gathered && !(llvm::isPowerOf2_64(width) && gathered->rowsAreRuns(width) &&
                      s.kc % width == 0))
      gathered.reset();
    // Tasks: every batch's C in row groups times column blocks of at most
    // NC columns, the batch outermost.
    Value batches = batched ? size(cm, 0) : x.c(1);
    Value rowGroups, groupRows, colBlocks;
    // A column block's first column and its column count.
    std::function<std::pair<Value, Value>(Ix &, Value)> columnsOf;
    if (m && n) {
      TaskSplit split = splitTasks(*m, *n, getConstantIntValue(batches).value_or(1), s, threads);
      // An empty C has no tasks.
      rowGroups = x.c(*m && *n ? split.rowGroups : 0);
      groupRows = x.c(split.groupRows);
      colBlocks = x.c(split.colBlocks);
      // Blocks of whole panels, as equal as can be (N = 1025 in one block
      // of 1024 columns and one of 1 left all but one thread idle).
      s.nc = llvm::divideCeil(split.panels, split.colBlocks) * s.nr;
      columnsOf = [&s, split](Ix &y, Value block) -> std::pair<Value, Value> {
        auto firstColumn = [&](Value blk) {
          Value panel = arith::DivSIOp::create(y.b, y.loc, y.mul(blk, split.panels),
                                               y.c(split.colBlocks));
          return y.mul(panel, s.nr);
        };
        Value j0 = firstColumn(block);
        return {j0, y.sub(y.min(firstColumn(y.add(block, 1)), s.n), j0)};
      };
    } else {
      // Run-time sizes: NC-column blocks, each split into row groups so
      // that the threads get equal shares (with a run-time N, `threads`
      // row groups per column block).
      if (n) {
        // Column blocks of about equal width.
        int64_t columns = std::max<int64_t>(*n, 1);
        s.nc = roundUp(llvm::divideCeil(columns, llvm::divideCeil(columns, s.nc)), s.nr);
      }
      colBlocks = x.ceilDiv(s.n, s.nc);
      int64_t share = threads;
      if (std::optional<int64_t> cols = getConstantIntValue(colBlocks))
        share = threads / std::gcd(*cols, threads);
      rowGroups = x.max(x.min(x.c(share), x.ceilDiv(s.m, s.mr)), 1);
      groupRows = x.mul(x.max(x.ceilDiv(x.ceilDiv(s.m, rowGroups), s.mr), 1), s.mr);
      rowGroups = x.ceilDiv(s.m, groupRows);
      columnsOf = [&s](Ix &y, Value block) -> std::pair<Value, Value> {
        Value j0 = y.mul(block, s.nc);
        return {j0, y.min(y.c(s.nc), y.sub(s.n, j0))};
      };
    }
    Value batchTasks = x.mul(rowGroups, colBlocks);
    // One dim, so that kiln-cpu-flatten-parallel-loops keeps the loop and
    // its task size; row groups innermost.
    auto tasks = scf::ParallelOp::create(
        rewriter, loc, ValueRange{x.c(0)}, ValueRange{x.mul(batches, batchTasks)},
        ValueRange{x.c(1)}, [&](OpBuilder &pb, Location, ValueRange t) {
          Ix y{pb, loc};
          Value batch, task = t[0];
          if (batched) {
            batch = arith::DivSIOp::create(pb, loc, t[0], batchTasks);
            task = arith::RemSIOp::create(pb, loc, t[0], batchTasks);
          }
          Value group = arith::RemSIOp::create(pb, loc, task, rowGroups);
          Value block = arith::DivSIOp::create(pb, loc, task, rowGroups);
          Value i0 = y.mul(group, groupRows);
          Value rows = y.min(groupRows, y.sub(s.m, i0));
          auto [j0, cols] = columnsOf(y, block);
          MatmulOperands mo{a, bm, cm, batch, epilogue, fill ? fill.getInputs()[0] : Value(),
                            gathered};
          emitTask(pb, loc, mo, s, i0, rows, j0, cols);
        });
    tasks->setAttr(kiln::kMinTaskSizeAttr, rewriter.getIndexAttr(1));
    if (epilogue)
      rewriter.eraseOp(epilogue);
    if (fill)
      rewriter.eraseOp(fill);
    rewriter.eraseOp(op);
    if (gathered)
      gathered->erase();
  }
};

struct KilnCpuTileMatmulPass
    : kiln::impl::KilnCpuTileMatmulBase<KilnCpuTileMatmulPass> {
  using KilnCpuTileMatmulBase::KilnCpuTileMatmulBase;
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> matmuls;
    getOperation()->walk([&](linalg::LinalgOp op) {
      if (isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op))
        matmuls.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    TileF32Matmul tile{vectorWidth, std::max<int64_t>(threads, 1)};
    for (linalg::LinalgOp op : matmuls) {
      rewriter.setInsertionPoint(op);
      tile.rewrite(op, rewriter);
    }
    // Folds what the kernels' index arithmetic left foldable and makes
    // their constants one per value.
    if (failed(applyPatternsGreedily(getOperation(), FrozenRewritePatternSet())))
      signalPassFailure();
  }
};

} // namespace
