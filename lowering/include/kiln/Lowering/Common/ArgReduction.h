//===- ArgReduction.h - matching argmax/argmin reductions -------*- C++ -*-===//
#ifndef KILN_LOWERING_COMMON_ARGREDUCTION_H
#define KILN_LOWERING_COMMON_ARGREDUCTION_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace kiln {

/// A linalg.generic on static buffers that reduces one loop into two
/// outputs, the best value and its index (kiln-convert-to-linalg's
/// ArgToGeneric): its body yields
/// (better || pos == 0 ? element : best, better || pos == 0 ? pos : bestIndex).
struct ArgReduction {
  mlir::linalg::GenericOp op;
  unsigned dim;          // the reduced loop
  mlir::Value better;    // in the body: the element beats the best so far
  mlir::Value first;     // in the body: the element is the row's first
  mlir::Value element;   // in the body: the element's value
  mlir::BlockArgument best, bestIndex;
};

std::optional<ArgReduction> matchArgReduction(mlir::linalg::GenericOp op);

/// The indices of `operand` of `op` at loop ivs `ivs` (its map is a
/// projected permutation).
llvm::SmallVector<mlir::Value> operandIndices(mlir::linalg::GenericOp op,
                                              mlir::OpOperand *operand,
                                              llvm::ArrayRef<mlir::Value> ivs);

/// The reduction's body at loop ivs `ivs` (the reduced one set) from the best
/// so far (`value`, `index`): the inputs loaded there, the body cloned.
/// `fromFills`: the best so far started from the outputs' fills (the
/// identity and index 0), which makes the rule that the row's first element
/// wins moot (an element that does not beat the identity is the identity,
/// and 0 is its index); it is left out, so that partials over runs of a
/// row that does not start at 0 compare nothing but values.
std::pair<mlir::Value, mlir::Value> argReductionStep(mlir::OpBuilder &b, const ArgReduction &arg,
                                                     llvm::ArrayRef<mlir::Value> ivs,
                                                     mlir::Value value, mlir::Value index,
                                                     bool fromFills = false);

/// The better of two partials (value, index) by the reduction's own
/// comparison; of equal ones, the one of lower index. Partials of disjoint
/// positions that start from the outputs' fills (the identity and index 0)
/// combine to the serial loop's result: the first occurrence of the best.
std::pair<mlir::Value, mlir::Value> combineArgPartials(mlir::OpBuilder &b, const ArgReduction &arg,
                                                       mlir::Value va, mlir::Value ia,
                                                       mlir::Value vb, mlir::Value ib);

} // namespace kiln

#endif // KILN_LOWERING_COMMON_ARGREDUCTION_H
