//===- AttentionTunables.h - tunables of the CPU attention kernel -*- C++ -*-===//
//
// The one declaration of kiln-cpu-attention-blocks' block shape.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LOWERING_CPU_ATTENTIONTUNABLES_H
#define KILN_LOWERING_CPU_ATTENTIONTUNABLES_H

#include "kiln/runtime/common/Tuning.h"

#include <cstdint>

namespace kiln {

/// A block takes `rows` query rows against `keyVectors` vectors of keys at
/// a time: rows x keyVectors vector accumulators of scores.
struct CpuAttentionTunables {
  /// 0: by the f32 lanes of a register, so that the scores fill three
  /// quarters of the register file (8 x 3 of AVX-512's 32, 4 x 3 of
  /// AVX2's 16).
  int64_t rows = 0;
  int64_t keyVectors = 3;
  constexpr int64_t rowsPerBlock(int64_t lanes) const { return rows ? rows : lanes >= 16 ? 8 : 4; }
  /// The autotuner's candidates, the default first. 8 x 3 measured best on
  /// a 2-core Zen 5 (1x16x1024x64 f32: 8 x 1 30-33 ms, 8 x 2 22-27, 8 x 3
  /// 17.6-19.5, 8 x 4 20-23, 6 x 4 23-26, 12 x 2 23-24).
  static TuneSpace tuneSpace() {
    return {"cpu.attention",
            {"rows", "key_vectors"},
            {{0, 3}, {8, 2}, {12, 2}, {6, 4}, {4, 4}, {4, 6}, {16, 1}}};
  }
  static CpuAttentionTunables fromConfig(const std::vector<int64_t> &v) {
    return {v.at(0), v.at(1)};
  }
};

} // namespace kiln

#endif
