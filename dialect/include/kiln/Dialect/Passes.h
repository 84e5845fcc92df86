//===- Passes.h - passes on kiln programs -----------------------*- C++ -*-===//
#ifndef KILN_DIALECT_PASSES_H
#define KILN_DIALECT_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace kiln {

#define GEN_PASS_DECL
#include "kiln/Dialect/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "kiln/Dialect/Passes.h.inc"

} // namespace kiln

#endif
