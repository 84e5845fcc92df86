//===- CudaMatmul.h - matmul kernel builders of kiln-cuda-tile-matmul -*- C++ -*-===//
#ifndef KILN_LOWERING_CUDA_CUDAMATMUL_H
#define KILN_LOWERING_CUDA_CUDAMATMUL_H

#include "kiln/Lowering/CUDA/MatmulTunables.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace kiln {

/// Builds index arithmetic at one insertion point.
struct IndexBuilder {
  mlir::OpBuilder &b;
  mlir::Location loc;
  mlir::Value c(int64_t v) { return mlir::arith::ConstantIndexOp::create(b, loc, v); }
  mlir::Value add(mlir::Value x, mlir::Value y) { return mlir::arith::AddIOp::create(b, loc, x, y); }
  mlir::Value add(mlir::Value x, int64_t y) { return add(x, c(y)); }
  mlir::Value mul(mlir::Value x, int64_t y) { return mlir::arith::MulIOp::create(b, loc, x, c(y)); }
  mlir::Value div(mlir::Value x, int64_t y) { return mlir::arith::DivUIOp::create(b, loc, x, c(y)); }
  mlir::Value rem(mlir::Value x, int64_t y) { return mlir::arith::RemUIOp::create(b, loc, x, c(y)); }
  mlir::Value xorI(mlir::Value x, mlir::Value y) { return mlir::arith::XOrIOp::create(b, loc, x, y); }
  mlir::Value lt(mlir::Value x, int64_t y) {
    return mlir::arith::CmpIOp::create(b, loc, mlir::arith::CmpIPredicate::ult, x, c(y));
  }
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

/// A matmul operand written by a copy generic (im2col) that the matmul's
/// loads can read through the copy's index map instead.
struct GatheredOperand {
  mlir::linalg::GenericOp copy;           // writes the operand's buffer
  mlir::memref::CollapseShapeOp view;     // the operand, a view of it; or null
  /// The operand's element at `indices` ([batch,] row, col) as a load of
  /// the copy's input.
  mlir::Value load(mlir::OpBuilder &b, mlir::Location loc, mlir::ValueRange indices) const;
  /// The copy's input and its indices of the operand's element at
  /// `indices`.
  std::pair<mlir::Value, llvm::SmallVector<mlir::Value>>
  source(mlir::OpBuilder &b, mlir::Location loc, mlir::ValueRange indices) const;
  /// Whether runs of `chunk` rows starting at a multiple of `chunk` are
  /// runs of `chunk` aligned, consecutive elements of the copy's input (the
  /// innermost dim the row splits into indexes the input's contiguous
  /// innermost dim alone, both multiples of `chunk` long): conv2d's
  /// channels-last patches, whose K is (kh, kw, c).
  bool rowsAreRuns(int64_t chunk) const;
  /// Erases the copy, the view and the buffer once the matmul is built.
  void erase();
};

/// `operand` of `matmul` as a gathered operand, when a copy generic wrote it
/// just before the matmul (nothing in between writes memory but `matmul`'s
/// fill) and nothing else reads it.
std::optional<GatheredOperand> findGatheredOperand(mlir::linalg::LinalgOp matmul,
                                                   mlir::Value operand);

/// Whether the tensor-core kernel takes this matmul: f16 or bf16 inputs of
/// one type (f32 too when `tf32`), contiguous, K a multiple of 16 bytes
/// (A's rows are whole 16-byte copies).
bool fitsMmaMatmul(mlir::linalg::LinalgOp op, bool tf32);

/// Replaces the matmul by the tensor-core kernel (mma.sync fed by ldmatrix
/// from swizzled shared memory, filled by cp.async `stages` deep), using at
/// most `maxSharedBytes` of shared memory.
mlir::LogicalResult buildMmaMatmul(mlir::linalg::LinalgOp op, const CudaMmaMatmulTunables &tiling,
                                   int64_t maxSharedBytes);

/// `tiling` with its tile N halved (down to 64) while the kernel would
/// launch fewer than `blocks` blocks (small matmuls, convs of small
/// images): narrower tiles, more of them, to fill the GPU.
CudaMmaMatmulTunables narrowTilesToFill(mlir::linalg::LinalgOp op, CudaMmaMatmulTunables tiling,
                                        int64_t blocks);

/// Whether the warpgroup kernel takes this matmul: f16 or bf16 where
/// fitsMmaMatmul holds, B's rows whole 16-byte copies and B not gathered.
bool fitsWgmmaMatmul(mlir::linalg::LinalgOp op);

/// Replaces the matmul by the Hopper kernel (wgmma from 128-byte-swizzled
/// shared memory filled by cp.async `stages` deep; sm_90a).
mlir::LogicalResult buildWgmmaMatmul(mlir::linalg::LinalgOp op,
                                     const CudaWgmmaMatmulTunables &tiling,
                                     int64_t maxSharedBytes);

// Pieces the tensor-core kernels share (CudaMmaMatmul.cpp).

/// The fill of `c` with zeros right before `op`, which the kernel's stores
/// make redundant, or null.
mlir::linalg::FillOp zeroFillBefore(mlir::linalg::LinalgOp op, mlir::Value c);

/// The output tile (row, column) of a block: consecutive blocks walk down
/// a group of 8 tile rows before moving right, for L2 reuse.
std::pair<mlir::Value, mlir::Value> groupedTileOrder(IndexBuilder &x, mlir::gpu::KernelDim3 block,
                                                     int64_t numTilesM, int64_t numTilesN);

/// Stores accumulators (row, col) and (row, col + 1) of C, a vector<2xf32>
/// `pair`, where they are inside the m x n matrix: C += pair with
/// `accumulate`, else C = pair; through `epilogue` (storing its output
/// instead) when there is one. An odd n stores the two one by one. With
/// `foldedColumns`, n counts the columns of all batches (columnIndices).
void storeAccumulatorPair(mlir::OpBuilder &b, mlir::Location loc, mlir::Value c,
                          mlir::Value batch, mlir::Value row, mlir::Value col, mlir::Value pair,
                          int64_t m, int64_t n, bool accumulate, mlir::linalg::GenericOp epilogue,
                          int64_t foldedColumns = 0);

} // namespace kiln

#endif
