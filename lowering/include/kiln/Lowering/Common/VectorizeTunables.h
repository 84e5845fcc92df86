//===- VectorizeTunables.h - vector widths of kiln's kernels ----*- C++ -*-===//
//
// The one declaration of the vector widths kernels are built with: the
// defaults of the passes' `vector-width` options and of the pipelines.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LOWERING_COMMON_VECTORIZETUNABLES_H
#define KILN_LOWERING_COMMON_VECTORIZETUNABLES_H

#include <cstdint>

namespace kiln {

struct VectorizeTunables {
  /// CPU: f32 lanes of the host's widest vector registers. The compiler
  /// asks the host; this default (AVX-512) is what kiln-opt uses.
  int64_t cpuLanes = 16;
  /// GPU: lanes of each thread's accesses, 16 bytes of f32.
  int64_t gpuLanes = 4;
};

} // namespace kiln

#endif
