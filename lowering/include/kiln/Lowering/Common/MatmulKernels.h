//===- MatmulKernels.h - pieces the GPU matmul kernel builders share -*- C++ -*-===//
//
// The CUDA kernels (kiln-cuda-tile-matmul), the Vulkan cooperative-matrix
// kernel (kiln-spirv-tile-matmul) and the SIMT kernel both targets build
// (GPU/SimtMatmul.h) build their launches from these.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LOWERING_COMMON_MATMULKERNELS_H
#define KILN_LOWERING_COMMON_MATMULKERNELS_H

#include "kiln/Lowering/Common/MatmulEpilogue.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace kiln {

/// Builds index arithmetic at one insertion point.
struct IndexBuilder {
  mlir::OpBuilder &b;
  mlir::Location loc;
  mlir::Value c(int64_t v) { return mlir::arith::ConstantIndexOp::create(b, loc, v); }
  mlir::Value add(mlir::Value x, mlir::Value y) { return mlir::arith::AddIOp::create(b, loc, x, y); }
  mlir::Value add(mlir::Value x, int64_t y) { return add(x, c(y)); }
  mlir::Value mul(mlir::Value x, mlir::Value y) { return mlir::arith::MulIOp::create(b, loc, x, y); }
  mlir::Value mul(mlir::Value x, int64_t y) { return mul(x, c(y)); }
  mlir::Value div(mlir::Value x, mlir::Value y) { return mlir::arith::DivUIOp::create(b, loc, x, y); }
  mlir::Value div(mlir::Value x, int64_t y) { return div(x, c(y)); }
  mlir::Value rem(mlir::Value x, int64_t y) { return mlir::arith::RemUIOp::create(b, loc, x, c(y)); }
  mlir::Value xorI(mlir::Value x, mlir::Value y) { return mlir::arith::XOrIOp::create(b, loc, x, y); }
  mlir::Value lt(mlir::Value x, mlir::Value y) {
    return mlir::arith::CmpIOp::create(b, loc, mlir::arith::CmpIPredicate::ult, x, y);
  }
  mlir::Value lt(mlir::Value x, int64_t y) { return lt(x, c(y)); }
  mlir::Value both(mlir::Value x, mlir::Value y) { return mlir::arith::AndIOp::create(b, loc, x, y); }
  mlir::Value select(mlir::Value cond, mlir::Value x, mlir::Value y) {
    return mlir::arith::SelectOp::create(b, loc, cond, x, y);
  }
};

/// Indices of element (row, col) of matrix operand `matrix`, with the batch
/// index first when it has a batch dim (one without is shared by every
/// batch).
inline llvm::SmallVector<mlir::Value> matrixIndices(mlir::Value matrix, mlir::Value batch,
                                                    mlir::Value row, mlir::Value col) {
  if (batch && mlir::cast<mlir::MemRefType>(matrix.getType()).getRank() == 3)
    return {batch, row, col};
  return {row, col};
}

/// The fill of `c` with zeros right before `op`, which the kernel's stores
/// make redundant, or null.
mlir::linalg::FillOp zeroFillBefore(mlir::linalg::LinalgOp op, mlir::Value c);

/// Erases what a kernel built in its place replaces: the matmul `op`, its
/// folded zero fill and its fused epilogue (either may be null).
inline void eraseReplacedMatmul(mlir::Operation *op, mlir::Operation *zeroFill,
                                mlir::Operation *epilogue) {
  op->erase();
  if (zeroFill)
    zeroFill->erase();
  if (epilogue)
    epilogue->erase();
}

/// The output tile (row, column) of the `order`-th tile: consecutive tiles
/// walk down a group of 8 tile rows before moving right, for L2 reuse. The
/// tile counts are index values (constants, or run-time sizes).
std::pair<mlir::Value, mlir::Value> groupedTileOrder(IndexBuilder &x, mlir::Value order,
                                                     mlir::Value numTilesM,
                                                     mlir::Value numTilesN);

/// The same for a block of a (numTilesN, numTilesM) grid.
std::pair<mlir::Value, mlir::Value> groupedTileOrder(IndexBuilder &x, mlir::gpu::KernelDim3 block,
                                                     mlir::Value numTilesM, mlir::Value numTilesN);

/// Indices of element (row, col) of B or C. A batched matmul whose A has
/// no batch dim can run as one matmul over the batches' columns side by
/// side (conv2d's images): with `foldedColumns` (the columns of one batch)
/// column col is column col % foldedColumns of batch col / foldedColumns.
inline llvm::SmallVector<mlir::Value> columnIndices(IndexBuilder &x, mlir::Value matrix,
                                                    mlir::Value batch, mlir::Value row,
                                                    mlir::Value col, int64_t foldedColumns) {
  if (foldedColumns)
    return {x.div(col, foldedColumns), row, x.rem(col, foldedColumns)};
  return matrixIndices(matrix, batch, row, col);
}

/// What a matmul's kernel takes over besides the matmul (either may be
/// null): the zero fill of C right before it, which the kernel's stores
/// make redundant, and an elementwise consumer of C after it, which the
/// kernel runs before its stores. Found once per matmul: a matmul of
/// run-time size may get several kernels (each launched where the others
/// are not) before all three are erased (eraseReplacedMatmul).
struct MatmulFusion {
  mlir::linalg::FillOp zeroFill;
  mlir::linalg::GenericOp epilogue;
};

/// A launch grid dim of `blocks` where `launchIf` holds (a host i1; null:
/// always), else of none: the runtime skips an empty grid.
inline mlir::Value gridWhere(mlir::OpBuilder &b, mlir::Location loc, mlir::Value launchIf,
                             mlir::Value blocks) {
  if (!launchIf)
    return blocks;
  return b.createOrFold<mlir::arith::SelectOp>(
      loc, launchIf, blocks, mlir::arith::ConstantIndexOp::create(b, loc, 0));
}

/// A buffer for `splits` partial sums of C, f32, [batch * splits + part] x
/// M x N rounded up to a multiple of `rowMultiple`. M may be known only at
/// run time (rowsOnlyAtRunTime): then the buffer has M rows where
/// `launchIf` holds and none elsewhere, as the kernels that would use it
/// launch no blocks there.
mlir::Value allocPartials(mlir::OpBuilder &b, mlir::Location loc, mlir::Value c, int64_t splits,
                          int64_t rowMultiple, mlir::Value launchIf);

/// C (+)= the sum of the `splits` parts of `partials` ([batch * splits +
/// part] x M x N rounded up to even, f32; M static or not) through
/// `fused`'s epilogue, where `launchIf` holds; C's rows odd unless
/// `evenRows`.
void sumPartialsKernel(mlir::OpBuilder &b, mlir::Location loc, mlir::Value partials,
                       int64_t splits, mlir::Value c, bool evenRows, const MatmulFusion &fused,
                       mlir::Value launchIf);

/// Stores accumulators (row, col) and (row, col + 1) of C, a vector<2xf32>
/// `pair`, where they are inside the m x n matrix (index values): C +=
/// pair with `accumulate`, else C = pair; through `epilogue` (storing its
/// output instead) when there is one, its `invariants` loaded before
/// (loadEpilogueInvariants). Unless C's rows are `evenRows` (of one batch
/// where batches are folded), the two are stored one by one. With
/// `foldedColumns`, n counts the columns of all batches (columnIndices).
void storeAccumulatorPair(mlir::OpBuilder &b, mlir::Location loc, mlir::Value c,
                          mlir::Value batch, mlir::Value row, mlir::Value col, mlir::Value pair,
                          mlir::Value m, mlir::Value n, bool evenRows, bool accumulate,
                          mlir::linalg::GenericOp epilogue,
                          const EpilogueInvariants &invariants, int64_t foldedColumns = 0);

/// The parts `steps` K steps split into for at most `splits` asked: as many
/// as leave no part empty (1 for 0).
int64_t partsOfSteps(int64_t steps, int64_t splits);

/// Whether `op`'s rows (M) are its one size known only at run time: C's
/// other dims, K and B static (a decode step's batch of tokens). Such a
/// matmul gets a kernel per bucket of row counts (rowBuckets), as the
/// tiling and the parts of K that fill the GPU depend on M.
bool rowsOnlyAtRunTime(mlir::linalg::LinalgOp op);

/// The host i1 `low < rows <= high` of a run-time row count (high < 0: no
/// upper bound).
mlir::Value rowsWithin(mlir::OpBuilder &b, mlir::Location loc, mlir::Value rows, int64_t low,
                       int64_t high);

/// A tiling taken by row counts from the previous bucket's `maxRows` (0)
/// up to this one's.
template <typename Tiling> struct RowBucket {
  int64_t maxRows;
  Tiling tiling;
};

/// The row buckets of a rowsOnlyAtRunTime matmul: at each of `bounds`
/// (ascending), the tiling `chosen(rows)` would give static rows, where it
/// differs from `runTime(rows)` (the run-time-size kernels' choice);
/// neighbours of one tiling merged. The first bound where both agree ends
/// the buckets: past it the run-time-size kernels run.
template <typename Tiling, typename Chosen, typename RunTime>
llvm::SmallVector<RowBucket<Tiling>> rowBuckets(llvm::ArrayRef<int64_t> bounds, Chosen chosen,
                                                RunTime runTime) {
  llvm::SmallVector<RowBucket<Tiling>> buckets;
  for (int64_t rows : bounds) {
    Tiling tiling = chosen(rows);
    if (tiling == runTime(rows))
      break;
    if (!buckets.empty() && buckets.back().tiling == tiling)
      buckets.back().maxRows = rows;
    else
      buckets.push_back({rows, tiling});
  }
  return buckets;
}

} // namespace kiln

#endif
