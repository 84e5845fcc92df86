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
#include "kiln/runtime/common/Tuning.h"

namespace kiln {

/// Parallel loops tiled into blocks and threads.
struct GpuMapLoopsTunables {
  int64_t blockSize = 256; // threads per block along the innermost dim
  /// The autotuner's candidates, the default first.
  static TuneSpace tuneSpace() {
    return {"gpu.map_loops", {"block_size"}, {{256}, {128}, {512}, {64}, {1024}}};
  }
  static GpuMapLoopsTunables fromConfig(const std::vector<int64_t> &v) { return {v.at(0)}; }
};

/// Reductions over the innermost loop, one block per row.
struct GpuRowReductionTunables {
  int64_t blockSize = 256; // threads per row
  int64_t vectorWidth = VectorizeTunables{}.gpuLanes; // lanes of each thread's loads
  /// The autotuner's candidates, the default first (vector width 1: scalar).
  static TuneSpace tuneSpace() {
    int64_t lanes = VectorizeTunables{}.gpuLanes;
    return {"gpu.row_reduction",
            {"threads_per_row", "vector_width"},
            {{256, lanes}, {128, lanes}, {512, lanes}, {1024, lanes}, {64, lanes}, {256, 1}}};
  }
  static GpuRowReductionTunables fromConfig(const std::vector<int64_t> &v) {
    return {v.at(0), v.at(1)};
  }
};

} // namespace kiln

#endif
