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

/// Sets kSizeSourcesAttrName (KilnOps.h: size, argument, dim per `?`
/// result dim) on each fill, iota, random_uniform and random_normal of
/// `entry` with `?` dims that lacks it: where each such dim takes its size,
/// a static size its class is tied to or an entry argument's dim. The compiler does so on the program as written, before
/// canonicalisation may delete the ops that tie the sizes (an unused add);
/// the kiln-to-linalg conversion for what is left (kiln-opt). Unsupported,
/// naming the op, where no input gives a size (as nameRunTimeSizes).
Expected<void> annotateSizeSources(mlir::func::FuncOp entry);

} // namespace kiln

#endif
