//===- CudaMmaFragments.h - mma.sync fragments for tensor-core kernels -*- C++ -*-===//
//
// What every mma.sync kernel shares (the matmul, attention): fragments
// loaded from shared memory by ldmatrix and the m16n8 multiply-accumulate
// on them, with f32 accumulators held as vector<4xf32> (c0..c3 of the m16n8
// C fragment: row lane/4, columns 2*(lane%4) and +1; c2, c3 eight rows
// down).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LOWERING_CUDA_CUDAMMAFRAGMENTS_H
#define KILN_LOWERING_CUDA_CUDAMMAFRAGMENTS_H

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/Builders.h"

namespace kiln {

/// The four 32-bit registers of an ldmatrix.x4 at `indices` of `stage` (a
/// shared-memory buffer of 16-bit or 32-bit elements), typed as
/// nvvm.mma.sync takes them: vector<2xf16> for f16, i32 for bf16 and tf32.
llvm::SmallVector<mlir::Value> loadMatrices(mlir::OpBuilder &b, mlir::Location loc,
                                            mlir::Value stage, mlir::ValueRange indices,
                                            bool transpose);

/// acc (vector<4xf32>, an m16n8 tile) += a (16 x k) * b (k x 8), inputs of
/// `type` (k = 16 for f16/bf16, 8 for tf32).
mlir::Value mmaSync(mlir::OpBuilder &b, mlir::Location loc, llvm::ArrayRef<mlir::Value> aRegs,
                    llvm::ArrayRef<mlir::Value> bRegs, mlir::Value acc,
                    mlir::NVVM::MMATypes type, int64_t k);

} // namespace kiln

#endif
