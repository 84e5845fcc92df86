//===- DynamicShapes.h - programs with run-time sizes -----------*- C++ -*-===//
//
// Which kiln ops lower with `?` dims, and how an entry function's run-time
// sizes relate: the shape class that the runtime checks inputs against and
// computes output shapes from (docs/dynamic-shapes.md).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LOWERING_KILNTOLINALG_DYNAMICSHAPES_H
#define KILN_LOWERING_KILNTOLINALG_DYNAMICSHAPES_H

#include "kiln/Dialect/KilnOps.h"
#include "kiln/Lowering/Compiler.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace kiln {

/// Whether `op` lowers with `?` dims in its operand or result types.
bool lowersWithDynamicDims(mlir::Operation *op);

/// Names the run-time sizes of `entry` in its signatures (whose shapes hold
/// the types' sizes): `?` dims that the ops require to be equal share a
/// symbol, a `?` that must equal a static size becomes that size, and every
/// output dim is a size, an input's symbol or a sum's; `rules` gets the
/// sums a run computes and the checks it makes beyond equal symbols.
/// InvalidArgument where sizes can never agree; Unsupported, naming the op,
/// for an op with `?` dims outside the slice that lowers them.
Expected<void> nameRunTimeSizes(mlir::func::FuncOp entry,
                                std::vector<TensorSignature> &inputs,
                                std::vector<TensorSignature> &outputs,
                                std::vector<SizeRule> &rules);

/// Where a `?` dim of a result that no operand sizes (fill, iota,
/// random_uniform, random_normal) takes its run-time size from: a static
/// size (`size` >= 0: its class is tied to one) or an entry argument's dim.
struct SizeSource {
  int64_t size;
  unsigned argument, dim;
};

/// Whether `op` makes a tensor whose sizes no operand gives.
bool isSizeless(mlir::Operation *op);

/// The attribute that tells such an op where its `?` sizes come from:
/// (size, argument, dim) per `?` result dim, as SizeSource.
inline constexpr llvm::StringLiteral kSizeSourcesAttr = kSizeSourcesAttrName;

/// Sets kSizeSourcesAttr on each such op of `entry` with `?` dims that
/// lacks it. The compiler does so on the program as written, before
/// canonicalisation may delete the ops that tie the sizes (an unused add);
/// the kiln-to-linalg conversion for what is left (kiln-opt). Unsupported,
/// naming the op, where no input gives a size (as nameRunTimeSizes).
Expected<void> annotateSizeSources(mlir::func::FuncOp entry);

} // namespace kiln

#endif
