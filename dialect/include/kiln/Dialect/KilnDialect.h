//===- KilnDialect.h - the kiln dialect -------------------------*- C++ -*-===//
#ifndef KILN_DIALECT_KILNDIALECT_H
#define KILN_DIALECT_KILNDIALECT_H

#include "mlir/IR/Dialect.h"

#include "kiln/Dialect/KilnDialect.h.inc"

#endif
