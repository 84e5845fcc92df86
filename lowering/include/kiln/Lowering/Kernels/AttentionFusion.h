//===- AttentionFusion.h - which kiln.attention ops become one kernel -*- C++ -*-===//
#ifndef KILN_LOWERING_KERNELS_ATTENTIONFUSION_H
#define KILN_LOWERING_KERNELS_ATTENTIONFUSION_H

#include "mlir/IR/Types.h"

#include <cstdint>

namespace kiln {

/// Which kiln.attention ops (static shapes) the conversion fuses into one
/// kiln_kernel.attention; the others become matmul, softmax, matmul.
enum class AttentionFusion {
  none,
  all,
  /// Those fitsTensorCoreAttention takes: a target with a fast fused kernel
  /// for them only (CUDA), where the generic one loses to the unfused form.
  tensorCores,
};

/// The attention CUDA's tensor-core kernel (kiln-cuda-mma-attention) takes:
/// f16 or bf16, head dims (q's and v's) of 64 or 128.
inline bool fitsTensorCoreAttention(mlir::Type element, int64_t headDim, int64_t valueDim) {
  auto supported = [](int64_t d) { return d == 64 || d == 128; };
  return (element.isF16() || element.isBF16()) && supported(headDim) && supported(valueDim);
}

} // namespace kiln

#endif
