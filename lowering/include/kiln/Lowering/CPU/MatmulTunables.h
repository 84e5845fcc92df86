//===- MatmulTunables.h - tunables of the CPU matmul kernel -----*- C++ -*-===//
//
// The one declaration of kiln-cpu-tile-matmul's register blocking.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LOWERING_CPU_MATMULTUNABLES_H
#define KILN_LOWERING_CPU_MATMULTUNABLES_H

#include <cstdint>

namespace kiln {

/// Each task owns `rows` x (vectorsPerRow * lanes) of C in vector registers.
struct CpuMatmulTunables {
  int64_t rows = 6; // MR: rows of C per block
  /// NV, vectors of C per row, by the f32 lanes of a register: MR*NV
  /// accumulators plus NV B vectors and one broadcast must fit the register
  /// file (32 registers with AVX-512's 16 lanes, 16 with AVX2's 8).
  int64_t vectorsPerRowWide = 4, vectorsPerRowNarrow = 2;
  constexpr int64_t vectorsPerRow(int64_t lanes) const {
    return lanes >= 16 ? vectorsPerRowWide : vectorsPerRowNarrow;
  }
};

} // namespace kiln

#endif
