//===- Passes.h - kiln ops -> linalg ----------------------------*- C++ -*-===//
#ifndef KILN_LOWERING_KILNTOLINALG_PASSES_H
#define KILN_LOWERING_KILNTOLINALG_PASSES_H

#include "kiln/Lowering/Kernels/AttentionFusion.h"
#include "mlir/Pass/Pass.h"

namespace kiln {

#define GEN_PASS_DECL
#include "kiln/Lowering/KilnToLinalg/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "kiln/Lowering/KilnToLinalg/Passes.h.inc"

} // namespace kiln

#endif
