//===- ScalarOps.h - scalar semantics of kiln's elementwise ops -*- C++ -*-===//
//
// One definition of what each elementwise kiln op computes on one element, in
// arith/math ops on signless scalars. Every target's kernels build on it.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LOWERING_KILNTOLINALG_SCALAROPS_H
#define KILN_LOWERING_KILNTOLINALG_SCALAROPS_H

#include "mlir/IR/Builders.h"

#include <array>

namespace kiln {

/// True for kiln's unsigned element types (ui8..ui64).
bool isUnsignedKilnType(mlir::Type type);
/// The signless type that stands for a kiln element type in kernels.
mlir::Type signlessType(mlir::Type type);
/// The type float arithmetic runs in: f32 for f16/bf16, the type otherwise.
mlir::Type computeFloatType(mlir::Type type);

/// Converts scalar `value` from kiln element type `from` to `to` with kiln's
/// `cast` semantics (float->int saturates, NaN -> 0; ->i1 is "non-zero").
mlir::Value castScalar(mlir::OpBuilder &b, mlir::Location loc,
                       mlir::Value value, mlir::Type from, mlir::Type to);

/// A constant of kiln element type `type` holding `value` (converted as `cast`
/// converts an f64).
mlir::Value scalarConstant(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::Type type, double value);

/// True if `op` is an elementwise kiln op that emitElementwise handles.
bool isElementwiseKilnOp(mlir::Operation *op);

/// Emits one element of elementwise kiln op `op` on signless scalars `args`
/// (one per operand, in the operand's signless element type). Returns the
/// result in the signless result element type.
mlir::Value emitElementwise(mlir::OpBuilder &b, mlir::Location loc,
                            mlir::Operation *op, mlir::ValueRange args);

/// Philox4x32-10 on counter (index, 0, 0) and key `seed`; returns the four
/// 32-bit words of the block.
std::array<mlir::Value, 4> emitPhilox(mlir::OpBuilder &b, mlir::Location loc,
                                      mlir::Value index64, mlir::Value seed64);

} // namespace kiln

#endif
