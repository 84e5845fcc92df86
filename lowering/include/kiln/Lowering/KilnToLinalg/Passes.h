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

/// Marks the generic that decodes an f8 matmul operand to f32 (its value:
/// the f8 type): kernel formation fuses nothing into or out of it, so a
/// target's matmul kernel may read the f8 bytes it reads instead
/// (kiln-cuda-tile-matmul's wgmma kernel); elsewhere it runs as it is.
inline constexpr llvm::StringLiteral kFloat8DecodeAttr = "kiln.f8_decode";

/// Marks the generic that writes a conv's padded channels-last image:
/// kernel formation fuses nothing into or out of it, so that the patches
/// stay a copy of it, which a target's matmul kernel may gather instead
/// (CUDA's implicit GEMM; fused, each patch element would redo the pad).
inline constexpr llvm::StringLiteral kConvImageAttr = "kiln.conv_image";

} // namespace kiln

#endif
