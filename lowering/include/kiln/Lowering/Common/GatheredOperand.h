//===- GatheredOperand.h - matmul operands read through a copy's map -*- C++ -*-===//
//
// A matmul operand that a copy generic wrote just before the matmul (conv's
// im2col) can be read through the copy's index map by the matmul's own
// loads, so the copy is never run (implicit GEMM): the CUDA kernels stage
// such a B from the padded image, the CPU kernel packs its panels from it.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LOWERING_COMMON_GATHEREDOPERAND_H
#define KILN_LOWERING_COMMON_GATHEREDOPERAND_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include <optional>

namespace kiln {

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
/// fill) and nothing else reads it (but its sizes, through views).
std::optional<GatheredOperand> findGatheredOperand(mlir::linalg::LinalgOp matmul,
                                                   mlir::Value operand);

/// The copy generic writing `buffer`: one input, identity output, a body
/// that yields the input element; or null.
mlir::linalg::GenericOp copyGenericInto(mlir::Value buffer);

/// Erases `writer`, a generic that wrote a buffer of its own (its init),
/// with the buffer and its deallocations, once nothing else reads it.
void eraseWithBuffer(mlir::linalg::GenericOp writer);

} // namespace kiln

#endif
