//===- CudaMatmul.h - matmul kernel builders of kiln-cuda-tile-matmul -*- C++ -*-===//
#ifndef KILN_LOWERING_CUDA_CUDAMATMUL_H
#define KILN_LOWERING_CUDA_CUDAMATMUL_H

#include "kiln/Lowering/CUDA/MatmulTunables.h"

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

/// Indices of element (row, col) of a matrix operand, with the batch index
/// first when the operand has one.
inline llvm::SmallVector<mlir::Value> matrixIndices(mlir::Value batch, mlir::Value row,
                                                    mlir::Value col) {
  if (batch)
    return {batch, row, col};
  return {row, col};
}

/// Whether the tensor-core kernel takes this matmul: f16 or bf16 inputs of
/// one type (f32 too when `tf32`), contiguous, N and K multiples of 16
/// bytes (rows of whole 16-byte copies).
bool fitsMmaMatmul(mlir::linalg::LinalgOp op, bool tf32);

/// Replaces the matmul by the tensor-core kernel (mma.sync fed by ldmatrix
/// from swizzled shared memory, filled by cp.async `stages` deep), using at
/// most `maxSharedBytes` of shared memory.
mlir::LogicalResult buildMmaMatmul(mlir::linalg::LinalgOp op, const CudaMmaMatmulTunables &tiling,
                                   int64_t maxSharedBytes);

/// Whether the warpgroup kernel takes this matmul: f16 or bf16 where
/// fitsMmaMatmul holds.
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
/// instead) when there is one.
void storeAccumulatorPair(mlir::OpBuilder &b, mlir::Location loc, mlir::Value c,
                          mlir::Value batch, mlir::Value row, mlir::Value col, mlir::Value pair,
                          int64_t m, int64_t n, bool accumulate, mlir::linalg::GenericOp epilogue);

} // namespace kiln

#endif
