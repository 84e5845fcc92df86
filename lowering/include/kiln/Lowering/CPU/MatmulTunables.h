//===- MatmulTunables.h - tunables of the CPU matmul kernel -----*- C++ -*-===//
//
// The one declaration of kiln-cpu-tile-matmul's register and cache blocking.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LOWERING_CPU_MATMULTUNABLES_H
#define KILN_LOWERING_CPU_MATMULTUNABLES_H

#include "kiln/runtime/common/Tuning.h"

#include <cstdint>

namespace kiln {

/// A micro-kernel holds `rows` x (vectorsPerRow * lanes) of C in vector
/// registers; a task owns a blockRows x blockCols block of C and packs, for
/// each kBlock-deep slice of k, its panels of A (for L2) and B (one
/// micro-panel of kBlock x vectorsPerRow * lanes for L1) into contiguous
/// buffers.
struct CpuMatmulTunables {
  int64_t rows = 6; // MR: rows of C per micro-kernel
  /// NV, vectors of C per row; 0: by the f32 lanes of a register, so that
  /// MR*NV accumulators plus NV B vectors and one broadcast fit the
  /// register file (32 registers with AVX-512's 16 lanes, 16 with AVX2's 8).
  int64_t vectors = 0;
  int64_t kBlock = 256;    // KC: k steps per packed panel
  int64_t blockRows = 96;  // MC: rows of C per task (rounded up to MR)
  int64_t blockCols = 1024; // NC: columns of C per task (rounded up to NR)
  constexpr int64_t vectorsPerRow(int64_t lanes) const {
    return vectors ? vectors : lanes >= 16 ? 4 : 2;
  }
  /// The autotuner's candidates, the default first.
  static TuneSpace tuneSpace() {
    return {"cpu.matmul",
            {"rows", "vectors_per_row", "k_block", "block_rows", "block_cols"},
            {{6, 0, 256, 96, 1024},
             {4, 0, 256, 96, 1024},
             {6, 0, 128, 144, 512},
             {6, 0, 384, 48, 1024},
             {8, 2, 256, 96, 1024},
             {4, 3, 256, 64, 384},
             {6, 1, 256, 96, 1024}}};
  }
  static CpuMatmulTunables fromConfig(const std::vector<int64_t> &v) {
    return {v.at(0), v.at(1), v.at(2), v.at(3), v.at(4)};
  }
};

} // namespace kiln

#endif
