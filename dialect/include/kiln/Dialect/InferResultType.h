//===- InferResultType.h - an op's result type from its operands -*- C++ -*-===//
//
// The dialect's one rule for the result type of each op, for callers that
// build an op from operands and attributes alone (the backend's typed ops).
// The rule is the one the verifiers check; the verifier stays the judge of
// malformed ops: for those, the type returned is only a placeholder that
// lets the verifier say what is wrong.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_DIALECT_INFERRESULTTYPE_H
#define KILN_DIALECT_INFERRESULTTYPE_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OperationSupport.h"

#include <optional>

namespace kiln {

/// How a caller of an op gets its result type.
enum class ResultRule {
  Inferred,        // from operands and attributes alone
  ElementOptional, // inferred; the caller may choose another element type
                   // (matmul: a wider one; dequantize: f16 or bf16)
  ElementRequired, // the shape inferred, the element type chosen (cast)
  Given,           // chosen by the caller (fill, iota, random_*, reshape,
                   // broadcast)
};

/// The rule of the kiln op `name`; nullopt for an op not of the dialect.
std::optional<ResultRule> resultRule(mlir::OperationName name);

/// The result type of `name` on `operands` with `attrs`; nullopt for
/// ResultRule::Given ops. An ElementRequired op gets its operand's element
/// type (the caller replaces it).
std::optional<mlir::RankedTensorType>
inferResultType(mlir::OperationName name, mlir::TypeRange operands,
                mlir::DictionaryAttr attrs);

/// `shape` without `dims` (or with them as 1 when `keepDims`).
llvm::SmallVector<int64_t> reducedShape(llvm::ArrayRef<int64_t> shape,
                                        llvm::ArrayRef<int64_t> dims,
                                        bool keepDims);

/// The output size of a sliding window (conv2d, the pools) along one dim:
/// (input + 2 padding - dilation (kernel - 1) - 1) / stride + 1, which is
/// < 1 where the window does not fit; dynamic for a dynamic input; nullopt
/// on int64 overflow. Needs kernel, stride, dilation >= 1, padding >= 0.
std::optional<int64_t> windowOutputSize(int64_t input, int64_t kernel, int64_t stride,
                                        int64_t padding, int64_t dilation = 1);

} // namespace kiln

#endif
