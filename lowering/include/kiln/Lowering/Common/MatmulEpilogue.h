//===- MatmulEpilogue.h - elementwise consumers fused into matmuls -*- C++ -*-===//
//
// A matmul's elementwise consumer (bias, activation, scaling) can run on
// the matmul's result while it is still in registers, so C never goes to
// memory: the CPU and both GPU matmul kernels do this.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LOWERING_COMMON_MATMULEPILOGUE_H
#define KILN_LOWERING_COMMON_MATMULEPILOGUE_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "llvm/ADT/DenseMap.h"

namespace kiln {

/// The elementwise generic right after `matmul` (C of rank 2, or 3 for a
/// batch_matmul) that can run on its
/// registers: it reads C in place, C is a temporary (an allocation, not an
/// output argument) and nothing else reads it afterwards, its
/// output is contiguous and the other inputs are rows or row values. Null
/// when there is none. When there is one, the allocations and constants
/// between the two move above `matmul`, so that everything the epilogue
/// uses is defined where the fused kernel is built.
mlir::linalg::GenericOp findMatmulEpilogue(mlir::linalg::LinalgOp matmul, mlir::Value c);

/// The epilogue's inputs read at constant indices (0-d scales, [1]
/// tensors), each by the value loaded from it.
using EpilogueInvariants = llvm::DenseMap<mlir::Value, mlir::Value>;

/// Loads the epilogue's invariant inputs once, before a kernel's stores:
/// loaded among them, each store would make the next element load them
/// again (nothing tells the compiler the buffers do not overlap).
EpilogueInvariants loadEpilogueInvariants(mlir::OpBuilder &b, mlir::Location loc,
                                          mlir::linalg::GenericOp epilogue);

/// Stores the epilogue's value at C's indices `ivs` ([batch,] i, j .. j +
/// width; width 0: one scalar) into its output, given C's value there (a
/// vector of `width` lanes or a scalar); the inputs in `invariants` as
/// loaded there; a vector store with `alignment` (bytes; null: the
/// element's).
void storeThroughEpilogue(mlir::OpBuilder &b, mlir::Location loc,
                          mlir::linalg::GenericOp epilogue, mlir::Value c, mlir::Value cValue,
                          mlir::ValueRange ivs, int64_t width,
                          const EpilogueInvariants &invariants = EpilogueInvariants(),
                          mlir::IntegerAttr alignment = {});

/// Whether a linalg.matmul or batch_matmul reads its operands as stored
/// (row-major [batch,] M x K and K x N): no transposes; a batch_matmul
/// operand without the batch dim is shared by every batch.
bool readsOperandsInPlace(mlir::linalg::LinalgOp matmul);

} // namespace kiln

#endif
