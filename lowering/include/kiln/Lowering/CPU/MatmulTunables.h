//===- MatmulTunables.h - tunables of the CPU matmul kernel -----*- C++ -*-===//
//
// The one declaration of kiln-cpu-tile-matmul's register blocking.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LOWERING_CPU_MATMULTUNABLES_H
#define KILN_LOWERING_CPU_MATMULTUNABLES_H

#include "kiln/runtime/common/Tuning.h"

#include <cstdint>

namespace kiln {

/// Each task owns `rows` x (vectorsPerRow * lanes) of C in vector registers.
struct CpuMatmulTunables {
  int64_t rows = 6; // MR: rows of C per block
  /// NV, vectors of C per row; 0: by the f32 lanes of a register, so that
  /// MR*NV accumulators plus NV B vectors and one broadcast fit the
  /// register file (32 registers with AVX-512's 16 lanes, 16 with AVX2's 8).
  int64_t vectors = 0;
  constexpr int64_t vectorsPerRow(int64_t lanes) const {
    return vectors ? vectors : lanes >= 16 ? 4 : 2;
  }
  /// The autotuner's candidates, the default first.
  static TuneSpace tuneSpace() {
    return {"cpu.matmul", {"rows", "vectors_per_row"}, {{6, 0}, {4, 0}, {8, 2}, {4, 3}, {6, 1}}};
  }
  static CpuMatmulTunables fromConfig(const std::vector<int64_t> &v) { return {v.at(0), v.at(1)}; }
};

} // namespace kiln

#endif
