//===- MatmulKernels.h - pieces the GPU matmul kernel builders share -*- C++ -*-===//
//
// The CUDA kernels (kiln-cuda-tile-matmul) and the Vulkan cooperative-matrix
// kernel (kiln-spirv-tile-matmul) build their launches from these.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LOWERING_COMMON_MATMULKERNELS_H
#define KILN_LOWERING_COMMON_MATMULKERNELS_H

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

} // namespace kiln

#endif
