//===- CpuTileMatmul.cpp - the kiln-cpu-tile-matmul pass -----------------===//
//
// f32 matmuls on buffers become a register-blocked kernel: each task owns an
// MR x (NV * VW) block of C, held in NV*MR vector registers across the whole
// k loop; every k step loads NV vectors of a B row and broadcasts MR scalars
// of A. The parallel loop runs i blocks innermost, so consecutive tasks of a
// thread reuse the same B panel from cache. Leftover rows use the same kernel
// with fewer rows; leftover columns a scalar loop. An elementwise consumer of
// C right after the matmul (bias, activation) runs on the registers before
// the store, so C never goes to memory.
//
//===----------------------------------------------------------------------===//
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
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_KILNCPUTILEMATMUL
#include "kiln/Lowering/CPU/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

struct MatmulOperands {
  Value a, b, c, batch; // batch is null for a plain matmul
  /// An elementwise consumer of C applied before the store: it writes its
  /// own output and C is never stored (null: store C).
  linalg::GenericOp epilogue;
};

SmallVector<Value> at(const MatmulOperands &m, Value i, Value j) {
  if (m.batch)
    return {m.batch, i, j};
  return {i, j};
}

/// Stores `acc` (a vector of `width` lanes, or a scalar for 0) as C[i, j..],
/// or, with an epilogue, the epilogue's value at [i, j..] into its output.
void storeResult(OpBuilder &b, Location loc, const MatmulOperands &m, Value acc,
                 Value i, Value j, int64_t width) {
  if (!m.epilogue) {
    if (width)
      vector::StoreOp::create(b, loc, acc, m.c, at(m, i, j));
    else
      memref::StoreOp::create(b, loc, acc, m.c, at(m, i, j));
    return;
  }
  kiln::storeThroughEpilogue(b, loc, m.epilogue, m.c, acc, i, j, width);
}

/// C[i0 .. i0+rows, j0 .. j0+vectors*width] += A[rows, :] * B[:, cols].
void emitBlock(OpBuilder &b, Location loc, const MatmulOperands &m, Value i0,
               Value j0, int64_t rows, int64_t vectors, int64_t width,
               int64_t k) {
  auto vecType = VectorType::get({width}, b.getF32Type());
  auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); };
  auto row = [&](int64_t r) { return arith::AddIOp::create(b, loc, i0, c(r)); };
  auto col = [&](int64_t v) {
    return arith::AddIOp::create(b, loc, j0, c(v * width));
  };
  SmallVector<Value> acc;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t v = 0; v < vectors; ++v)
      acc.push_back(vector::LoadOp::create(b, loc, vecType, m.c, at(m, row(r), col(v))));
  auto loop = scf::ForOp::create(
      b, loc, c(0), c(k), c(1), acc,
      [&](OpBuilder &lb, Location l, Value kk, ValueRange iters) {
        SmallVector<Value> bRow;
        for (int64_t v = 0; v < vectors; ++v)
          bRow.push_back(vector::LoadOp::create(
              lb, l, vecType, m.b,
              at(m, kk, arith::AddIOp::create(lb, l, j0,
                                              arith::ConstantIndexOp::create(lb, l, v * width)))));
        SmallVector<Value> next;
        for (int64_t r = 0; r < rows; ++r) {
          Value ar = memref::LoadOp::create(
              lb, l, m.a,
              at(m, arith::AddIOp::create(lb, l, i0, arith::ConstantIndexOp::create(lb, l, r)),
                 kk));
          Value splat = vector::BroadcastOp::create(lb, l, vecType, ar);
          for (int64_t v = 0; v < vectors; ++v)
            next.push_back(vector::FMAOp::create(lb, l, splat, bRow[v],
                                                 iters[r * vectors + v]));
        }
        scf::YieldOp::create(lb, l, next);
      });
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t v = 0; v < vectors; ++v)
      storeResult(b, loc, m, loop.getResult(r * vectors + v), row(r), col(v),
                  width);
}

/// Scalar C[i, j] += sum_k A[i, k] * B[k, j] over a rectangle of C.
void emitScalarRegion(OpBuilder &b, Location loc, const MatmulOperands &m,
                      int64_t i0, int64_t i1, int64_t j0, int64_t j1, int64_t k) {
  if (i0 >= i1 || j0 >= j1)
    return;
  auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); };
  scf::ParallelOp::create(
      b, loc, ValueRange{c(i0), c(j0)}, ValueRange{c(i1), c(j1)},
      ValueRange{c(1), c(1)}, [&](OpBuilder &pb, Location l, ValueRange ij) {
        Value init = memref::LoadOp::create(pb, l, m.c, at(m, ij[0], ij[1]));
        auto loop = scf::ForOp::create(
            pb, l, c(0), c(k), c(1), ValueRange{init},
            [&](OpBuilder &lb, Location ll, Value kk, ValueRange sum) {
              Value x = memref::LoadOp::create(lb, ll, m.a, at(m, ij[0], kk));
              Value y = memref::LoadOp::create(lb, ll, m.b, at(m, kk, ij[1]));
              scf::YieldOp::create(lb, ll,
                                   ValueRange{math::FmaOp::create(lb, ll, x, y, sum[0])});
            });
        storeResult(pb, l, m, loop.getResult(0), ij[0], ij[1], 0);
      });
}

struct TileF32Matmul : OpInterfaceRewritePattern<linalg::LinalgOp> {
  TileF32Matmul(MLIRContext *ctx, int64_t width)
      : OpInterfaceRewritePattern(ctx), width(width) {}

  LogicalResult matchAndRewrite(linalg::LinalgOp op,
                                PatternRewriter &rewriter) const override {
    if (!isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op) ||
        !op.hasPureBufferSemantics())
      return failure();
    Value a = op.getDpsInputs()[0], bm = op.getDpsInputs()[1],
          cm = op.getDpsInits()[0];
    for (Value v : {a, bm, cm}) {
      auto type = cast<MemRefType>(v.getType());
      if (!type.getElementType().isF32() || !type.hasStaticShape())
        return failure();
    }
    if (!kiln::unitInnerStride(bm) || !kiln::unitInnerStride(cm))
      return failure();
    bool batched = isa<linalg::BatchMatmulOp>(op);
    auto cShape = cast<MemRefType>(cm.getType()).getShape();
    int64_t batch = batched ? cShape[0] : 1;
    int64_t mSize = cShape[cShape.size() - 2], nSize = cShape.back();
    int64_t kSize = cast<MemRefType>(a.getType()).getShape().back();
    kiln::CpuMatmulTunables tiling;
    if (auto tuned = kiln::tunedMatmulConfig(op, kiln::CpuMatmulTunables::tuneSpace()))
      tiling = kiln::CpuMatmulTunables::fromConfig(*tuned);
    const int64_t rows = tiling.rows; // MR: rows of C per block
    int64_t rowBlocks = mSize / rows, leftRows = mSize % rows;
    Location loc = op.getLoc();
    auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(rewriter, loc, v); };
    // Column groups: full blocks of NV vectors, then one block of the
    // leftover whole vectors; the last columns (< one vector) go scalar.
    struct ColumnGroup {
      int64_t start, blocks, vectors;
    };
    int64_t nv = tiling.vectorsPerRow(width);
    SmallVector<ColumnGroup> groups;
    int64_t fullBlocks = nSize / (nv * width);
    if (fullBlocks > 0)
      groups.push_back({0, fullBlocks, nv});
    int64_t vectorCols = fullBlocks * nv * width;
    if (int64_t left = (nSize - vectorCols) / width; left > 0) {
      groups.push_back({vectorCols, 1, left});
      vectorCols += left * width;
    }

    linalg::GenericOp epilogue = batched ? linalg::GenericOp() : kiln::findMatmulEpilogue(op, cm);
    auto perBatch = [&](OpBuilder &b, Value batchIndex) {
      MatmulOperands m{a, bm, cm, batchIndex, epilogue};
      for (const ColumnGroup &g : groups) {
        int64_t blockCols = g.vectors * width;
        auto blockStart = [&](OpBuilder &pb, Location l, Value jb) {
          Value j = arith::MulIOp::create(pb, l, jb,
                                          arith::ConstantIndexOp::create(pb, l, blockCols));
          return arith::AddIOp::create(pb, l, j,
                                       arith::ConstantIndexOp::create(pb, l, g.start));
        };
        if (rowBlocks > 0) {
          scf::ParallelOp::create(
              b, loc, ValueRange{c(0), c(0)}, ValueRange{c(g.blocks), c(rowBlocks)},
              ValueRange{c(1), c(1)}, [&](OpBuilder &pb, Location l, ValueRange ji) {
                Value i0 = arith::MulIOp::create(
                    pb, l, ji[1], arith::ConstantIndexOp::create(pb, l, rows));
                emitBlock(pb, l, m, i0, blockStart(pb, l, ji[0]), rows, g.vectors,
                          width, kSize);
              });
        }
        if (leftRows > 0) {
          scf::ParallelOp::create(
              b, loc, ValueRange{c(0)}, ValueRange{c(g.blocks)}, ValueRange{c(1)},
              [&](OpBuilder &pb, Location l, ValueRange jb) {
                emitBlock(pb, l, m,
                          arith::ConstantIndexOp::create(pb, l, rowBlocks * rows),
                          blockStart(pb, l, jb[0]), leftRows, g.vectors, width, kSize);
              });
        }
      }
      emitScalarRegion(b, loc, m, 0, mSize, vectorCols, nSize, kSize);
    };
    if (batched) {
      scf::ForOp::create(rewriter, loc, c(0), c(batch), c(1), ValueRange{},
                         [&](OpBuilder &b, Location, Value bi, ValueRange) {
                           perBatch(b, bi);
                           scf::YieldOp::create(b, loc);
                         });
    } else {
      perBatch(rewriter, nullptr);
    }
    if (epilogue)
      rewriter.eraseOp(epilogue);
    rewriter.eraseOp(op);
    return success();
  }

  int64_t width;
};

struct KilnCpuTileMatmulPass
    : kiln::impl::KilnCpuTileMatmulBase<KilnCpuTileMatmulPass> {
  using KilnCpuTileMatmulBase::KilnCpuTileMatmulBase;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<TileF32Matmul>(&getContext(), vectorWidth);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
