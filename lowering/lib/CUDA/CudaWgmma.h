//===- CudaWgmma.h - pieces of the Hopper (sm_90a) kernels -*- C++ -*-===//
//
// What the kernels on warpgroup MMA fed by TMA share (the matmul, the
// attention): tensor maps, shared-memory pointers, mbarrier waits, TMA
// copies and wgmma matrix descriptors, all on the 128-byte swizzle (16-byte
// chunk c of a 128-byte row r at chunk c ^ (r % 8)), which TMA writes and
// wgmma reads.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LOWERING_CUDA_CUDAWGMMA_H
#define KILN_LOWERING_CUDA_CUDAWGMMA_H

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/Builders.h"

namespace kiln {

/// Bytes of a swizzled row: the inner box dim of every tensor map.
constexpr int64_t kSwizzleBytes = 128;
/// Threads of a warpgroup.
constexpr int64_t kWarpgroupThreads = 128;

/// `index` as an i64 / i32.
mlir::Value toI64(mlir::OpBuilder &b, mlir::Location loc, mlir::Value index);
mlir::Value toI32(mlir::OpBuilder &b, mlir::Location loc, mlir::Value index);
mlir::Value i32(mlir::OpBuilder &b, mlir::Location loc, int64_t v);

/// The shared-memory pointer at byte address `address` (an index).
mlir::Value sharedPointer(mlir::OpBuilder &b, mlir::Location loc, mlir::Value address);

/// A tensor map of `matrix` ([batch,] rows, cols) whose box is `boxRows` x
/// `boxCols` (one batch; boxCols elements are 128 bytes), 128-byte
/// swizzled and zero outside: on the host, as the pointer a kernel takes.
mlir::Value tensorMap(mlir::OpBuilder &b, mlir::Location loc, mlir::Value matrix,
                      int64_t boxRows, int64_t boxCols);

/// TMA copy of the box of `map` at `coordinates` (index values, innermost
/// first: column, row[, batch]) into shared memory at byte address `to`,
/// completing on the mbarrier `barrier` (a shared-memory pointer).
void tmaLoad(mlir::OpBuilder &b, mlir::Location loc, mlir::Value map,
             mlir::ValueRange coordinates, mlir::Value to, mlir::Value barrier);

/// Waits until the mbarrier at byte address `barrier` completed the phase
/// of `parity` (an index, 0 or 1).
void waitBarrier(mlir::OpBuilder &b, mlir::Location loc, mlir::Value barrier, mlir::Value parity);

/// A wgmma shared-memory matrix descriptor without its start address: the
/// 128-byte swizzle, and the byte strides between 8-row groups (`stride`)
/// and between 64-column blocks of an N-major operand (`leading`).
int64_t descriptorBits(int64_t leading, int64_t stride);

/// The descriptor of the matrix at byte address `start` (1024-aligned
/// where its swizzle pattern starts) with `bits` (descriptorBits); a byte
/// offset adds offset / 16 to it.
mlir::Value matrixDescriptor(mlir::OpBuilder &b, mlir::Location loc, mlir::Value start,
                             int64_t bits);

/// wgmma's name of an element type of A or B (f8: the type its decode
/// reads).
mlir::NVVM::WGMMATypes wgmmaTypeOf(mlir::Type element);

} // namespace kiln

#endif
