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

/// What a loop range is, so that ranges of one run-time size compare equal:
/// (null, size) when static, else the argument dim or value it comes from
/// (through the sizes of memref.alloc).
using RangeKey = std::pair<mlir::Value, int64_t>;
RangeKey rangeKey(mlir::Value buffer, int64_t dim);

/// Per loop of `op`: an operand and its dim that the loop ranges over.
llvm::SmallVector<std::pair<mlir::Value, int64_t>> loopSources(mlir::linalg::GenericOp op);

/// Per loop of `op`: the rangeKey of its loopSources entry.
llvm::SmallVector<RangeKey> loopKeys(mlir::linalg::GenericOp op);

/// The size of dim `source.second` of buffer `source.first` at `b`: a
/// constant or a memref.dim.
mlir::Value loopSize(mlir::OpBuilder &b, mlir::Location loc,
                     std::pair<mlir::Value, int64_t> source);

} // namespace kiln

#endif
