//===- KernelTunables.h - tunables of the shared GPU kernels ----*- C++ -*-===//
//
// The one declaration of the tunables of the kernel templates both GPU
// targets share: index-map kernels (kiln-gpu-map-loops) and row
// reductions (kiln-gpu-row-reductions).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LOWERING_GPU_KERNELTUNABLES_H
#define KILN_LOWERING_GPU_KERNELTUNABLES_H

#include "kiln/Lowering/Common/VectorizeTunables.h"

namespace kiln {

/// Parallel loops tiled into blocks and threads.
struct GpuMapLoopsTunables {
  int64_t blockSize = 256; // threads per block along the innermost dim
};

/// Reductions over the innermost loop, one block per row.
struct GpuRowReductionTunables {
  int64_t blockSize = 256; // threads per row
  int64_t vectorWidth = VectorizeTunables{}.gpuLanes; // lanes of each thread's loads
};

} // namespace kiln

#endif
