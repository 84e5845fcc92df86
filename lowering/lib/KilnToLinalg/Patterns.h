//===- Patterns.h - kiln -> linalg conversion patterns ----------*- C++ -*-===//
//
// Internal to the kiln-convert-to-linalg pass. Kiln tensors become signless
// tensors (ui32 -> i32); the ops' own types still say which are unsigned.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LOWERING_KILNTOLINALG_PATTERNS_H
#define KILN_LOWERING_KILNTOLINALG_PATTERNS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Transforms/DialectConversion.h"

#include <functional>

namespace kiln::to_linalg {

using BodyFn = std::function<mlir::Value(mlir::OpBuilder &, mlir::Location,
                                         mlir::ValueRange)>;

mlir::RankedTensorType signlessTensorType(mlir::Type kilnTensorType);
mlir::Value emptyTensor(mlir::OpBuilder &b, mlir::Location loc,
                        llvm::ArrayRef<int64_t> shape, mlir::Type elementType);
/// Map from a result's iteration space to an operand that NumPy-broadcasts to
/// it (size-1 dims read index 0; missing leading dims are dropped).
mlir::AffineMap broadcastMap(llvm::ArrayRef<int64_t> operandShape,
                             llvm::ArrayRef<int64_t> resultShape,
                             mlir::MLIRContext *ctx);
/// A parallel linalg.generic over `resultShape` whose inputs broadcast to it.
mlir::Value buildElementwise(mlir::OpBuilder &b, mlir::Location loc,
                             llvm::ArrayRef<int64_t> resultShape,
                             mlir::Type resultElementType,
                             mlir::ValueRange inputs, const BodyFn &body);
/// Reduces `input` over `dims` with `combine`, starting from `init` (a scalar
/// of the accumulator type); the result drops the reduced dims.
mlir::Value buildReduction(
    mlir::OpBuilder &b, mlir::Location loc, mlir::Value input,
    llvm::ArrayRef<int64_t> dims, mlir::Value init,
    const std::function<mlir::Value(mlir::OpBuilder &, mlir::Location,
                                    mlir::Value elem, mlir::Value acc)> &combine);
/// Elementwise over `full`'s shape, with `rowValues` (shaped like `full` minus
/// dim `dim`) broadcast along `dim`. The body sees the full args, then rows.
mlir::Value buildRowwise(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::ValueRange full, mlir::ValueRange rowValues,
                         int64_t dim, mlir::Type resultElementType,
                         const BodyFn &body);
/// `x` padded with `value` (a scalar of its element type): `low` and
/// `high` entries before and after each dim.
mlir::Value buildPad(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x,
                     llvm::ArrayRef<int64_t> low, llvm::ArrayRef<int64_t> high,
                     mlir::Value value);
/// Reinserts size-1 dims at `dims` into `value` (keep_dims).
mlir::Value expandKeptDims(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::Value value, llvm::ArrayRef<int64_t> dims,
                           llvm::ArrayRef<int64_t> fullShape);
/// Reshapes a static tensor to `shape` through collapse/expand.
mlir::Value reshapeTo(mlir::OpBuilder &b, mlir::Location loc, mlir::Value value,
                      llvm::ArrayRef<int64_t> shape);

void populateElementwisePatterns(mlir::TypeConverter &converter,
                                 mlir::RewritePatternSet &patterns);
void populateDataMovementPatterns(mlir::TypeConverter &converter,
                                  mlir::RewritePatternSet &patterns);
void populateReductionPatterns(mlir::TypeConverter &converter,
                               mlir::RewritePatternSet &patterns);
void populateMatmulPatterns(mlir::TypeConverter &converter,
                            mlir::RewritePatternSet &patterns);
void populateQuantizePatterns(mlir::TypeConverter &converter,
                              mlir::RewritePatternSet &patterns);
void populateConvPatterns(mlir::TypeConverter &converter,
                          mlir::RewritePatternSet &patterns);
void populateAttentionPatterns(mlir::TypeConverter &converter,
                               mlir::RewritePatternSet &patterns);

} // namespace kiln::to_linalg

#endif
