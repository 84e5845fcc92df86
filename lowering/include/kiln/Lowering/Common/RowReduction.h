//===- RowReduction.h - matching reductions over the innermost loop --*- C++ -*-===//
#ifndef KILN_LOWERING_COMMON_ROWREDUCTION_H
#define KILN_LOWERING_COMMON_ROWREDUCTION_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace kiln {

/// A linalg.generic on buffers that reduces its innermost loop with an
/// associative op: out[outer] = combine(out[outer], element(outer, j)) for all
/// j, where `element` is computed by the body ops other than `combiner`.
struct RowReduction {
  mlir::Operation *combiner;
  mlir::Value element; // the combiner's operand that is not the accumulator
  mlir::vector::CombiningKind kind;
};

/// Matches `op` as a RowReduction: all loops parallel but the last, one
/// output indexed by the outer loops, an arith/math body whose yield is an
/// associative combination of the accumulator (float sums and products only
/// when marked reassociable).
std::optional<RowReduction> matchRowReduction(mlir::linalg::GenericOp op);

/// The value that `kind` leaves unchanged, of scalar type `type`.
mlir::Value reductionIdentity(mlir::OpBuilder &b, mlir::Location loc,
                              mlir::vector::CombiningKind kind, mlir::Type type);

/// A linalg.generic over `iterators` folding `partials` into `out` (through
/// `maps`) with `reduction`'s combiner, cloned from the body whose output
/// argument is `acc`: the second step of a reduction split in two.
mlir::linalg::GenericOp buildCombine(mlir::OpBuilder &b, mlir::Location loc,
                                     const RowReduction &reduction, mlir::Value acc,
                                     mlir::Value partials, mlir::Value out,
                                     llvm::ArrayRef<mlir::AffineMap> maps,
                                     llvm::ArrayRef<mlir::utils::IteratorType> iterators);

/// True if every op of the generic's body is a scalar arith/math op.
bool hasScalarBody(mlir::linalg::GenericOp op);

} // namespace kiln

#endif
