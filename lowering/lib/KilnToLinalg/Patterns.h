//===- Patterns.h - kiln -> linalg conversion patterns ----------*- C++ -*-===//
//
// Internal to the kiln-convert-to-linalg pass. Kiln tensors become signless
// tensors (ui32 -> i32); the ops' own types still say which are unsigned.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LOWERING_KILNTOLINALG_PATTERNS_H
#define KILN_LOWERING_KILNTOLINALG_PATTERNS_H

#include "kiln/Lowering/Kernels/AttentionFusion.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Transforms/DialectConversion.h"

#include <functional>

namespace kiln::to_linalg {

using BodyFn = std::function<mlir::Value(mlir::OpBuilder &, mlir::Location,
                                         mlir::ValueRange)>;

mlir::RankedTensorType signlessTensorType(mlir::Type kilnTensorType);
/// The `?` result sizes of a fill, iota or random op at `b` (its
/// kSizeSourcesAttrName, KilnOps.h): constants, or dims of its function's
/// arguments.
llvm::SmallVector<mlir::Value> sizelessDynamicSizes(mlir::ConversionPatternRewriter &rewriter,
                                                    mlir::Operation *op);
/// `dynamicSizes`: one index per `?` dim of `shape`.
mlir::Value emptyTensor(mlir::OpBuilder &b, mlir::Location loc,
                        llvm::ArrayRef<int64_t> shape, mlir::Type elementType,
                        mlir::ValueRange dynamicSizes = {});
/// The sizes of `shape`'s `?` dims, each read off the first of `sources`
/// whose dim in the same place counted from the right (as broadcasting
/// aligns them) is not a static 1: the verifier and the shape class
/// (DynamicShapes.h) make those one size. With no such operand it is 1.
llvm::SmallVector<mlir::Value> dynamicSizes(mlir::OpBuilder &b, mlir::Location loc,
                                            llvm::ArrayRef<int64_t> shape,
                                            mlir::ValueRange sources);
/// Dim `dim` of `tensor` as an index (a constant when static).
mlir::Value dimSize(mlir::OpBuilder &b, mlir::Location loc, mlir::Value tensor, int64_t dim);
/// The sizes of `tensor`'s `?` dims among `dims`, in order: the `dynamicSizes`
/// of a tensor shaped as those dims of it.
llvm::SmallVector<mlir::Value> dynamicDimSizes(mlir::OpBuilder &b, mlir::Location loc,
                                               mlir::Value tensor, llvm::ArrayRef<int64_t> dims);
/// Dim `dim` of `tensor` as a `floatType` scalar (a constant when static).
mlir::Value dimSizeAsFloat(mlir::OpBuilder &b, mlir::Location loc, mlir::Value tensor,
                           int64_t dim, mlir::Type floatType);
/// Map from a result's iteration space to an operand that NumPy-broadcasts to
/// it (size-1 dims read index 0; missing leading dims are dropped).
mlir::AffineMap broadcastMap(llvm::ArrayRef<int64_t> operandShape,
                             llvm::ArrayRef<int64_t> resultShape,
                             mlir::MLIRContext *ctx);
/// A parallel linalg.generic over `resultShape` whose inputs broadcast to it;
/// its `?` sizes are `resultSizes` where given (no input has them: fill,
/// iota, random), else read off the inputs (dynamicSizes).
mlir::Value buildElementwise(mlir::OpBuilder &b, mlir::Location loc,
                             llvm::ArrayRef<int64_t> resultShape,
                             mlir::Type resultElementType,
                             mlir::ValueRange inputs, const BodyFn &body,
                             mlir::ValueRange resultSizes = {});
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
/// Reshapes a tensor to `shape` through collapse/expand (at most one `?`
/// dim on either side).
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
/// `fuse`: static shapes become kiln_kernel.attention.
void populateAttentionPatterns(mlir::TypeConverter &converter,
                               mlir::RewritePatternSet &patterns,
                               AttentionFusion fusion);

} // namespace kiln::to_linalg

#endif
