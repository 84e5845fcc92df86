//===- MatmulTunables.h - tunables of CUDA's matmul kernels -----*- C++ -*-===//
//
// The one declaration of the CUDA matmul templates' tunables and defaults:
// kiln-cuda-tile-matmul's options, the CUDA pipeline, CompileOptions and
// its cache key all read it. Plain C++ (no MLIR), for the backend too.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LOWERING_CUDA_MATMULTUNABLES_H
#define KILN_LOWERING_CUDA_MATMULTUNABLES_H

#include "kiln/runtime/common/Tuning.h"
#include "kiln/runtime/common/Switch.h"

#include <array>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

namespace kiln {

/// The tensor-core kernel (mma.sync, sm_80 and later): 128 x `tileN` outputs
/// per block of 8 warps, K in steps of `stepBytes` of A's rows through
/// `stages` shared-memory buffers filled by cp.async.
struct CudaMmaMatmulTunables {
  int64_t tileN = 256;    // 64, 128, 192 or 256
  int64_t stages = 2;     // 2 or more
  int64_t stepBytes = 128; // 64 or 128

  /// Shared memory the kernel's stages take.
  constexpr int64_t sharedBytes() const { return stages * (128 + tileN) * stepBytes; }
  /// "NxSxB", as cache keys and benchmark tables write it.
  std::string key() const {
    return std::to_string(tileN) + "x" + std::to_string(stages) + "x" +
           std::to_string(stepBytes);
  }
  constexpr bool operator==(const CudaMmaMatmulTunables &) const = default;

  /// What a chip whose opt-in shared memory cannot hold a tiling gets: it
  /// fits every tensor-core chip (32 KiB).
  static constexpr CudaMmaMatmulTunables portable() { return {128, 2, 64}; }
  /// The autotuner's candidates: the default first (the H200 sweep of
  /// docs/cuda.md: fastest on bf16 and tf32), then the runners-up of that
  /// sweep, the portable tiling last.
  static constexpr std::array<CudaMmaMatmulTunables, 6> candidates() {
    return {{{}, {128, 4, 128}, {128, 4, 64}, {128, 3, 128}, {256, 3, 64}, portable()}};
  }
  /// The tiling as its tune space's config.
  std::vector<int64_t> config() const { return {tileN, stages, stepBytes}; }
  /// The candidates for the tune files (docs/autotune.md).
  static TuneSpace tuneSpace() {
    TuneSpace space{"cuda.matmul.mma", {"tile_n", "stages", "step_bytes"}, {}};
    for (const CudaMmaMatmulTunables &c : candidates())
      space.candidates.push_back(c.config());
    return space;
  }
  static CudaMmaMatmulTunables fromConfig(const std::vector<int64_t> &v) {
    return {v.at(0), v.at(1), v.at(2)};
  }
};

/// The warpgroup kernel (wgmma, sm_90a): 128 x `tileN` outputs per block
/// of two warpgroups, K in steps of 64 elements through `stages` buffers of
/// 128-byte-swizzled shared memory; K cut into `splitK` parts, each a block
/// of its own, whose partial sums a second kernel adds (static sizes).
struct CudaWgmmaMatmulTunables {
  int64_t tileN = 256;  // 64, 128 or 256
  int64_t stages = 4;   // 3 or more
  int64_t splitK = 0;   // 1 to kMaxSplitK; 0: chosen to fill the GPU

  static constexpr int64_t kMaxSplitK = 16;

  static constexpr int64_t kStepBytes = 128;   // one swizzled row of A per K step
  static constexpr int64_t kAlignment = 1024;  // of a 128-byte-swizzled tile
  /// f8 keeps a second accumulator (each step's sums, then added to the
  /// first): two of 64 x tileN f32 fit a consumer's registers up to this.
  /// (Tried: 256 wide, the sums made 128 columns at a time: 2.2 ms for
  /// 8192^3 on the H200 against 1.0, L1 78% busy.)
  static constexpr int64_t kMaxFloat8TileN = 128;
  /// A matmul whose rows alone are known only at run time takes, up to
  /// each of these row counts, the tiling and parts of K that
  /// fillGpuWithWgmma gives that many rows (rowBuckets); the unsplit
  /// default above.
  static constexpr std::array<int64_t, 2> kRowBuckets{128, 512};
  /// Shared memory the kernel asks for: its stages, the slack that aligns
  /// them and two 8-byte mbarriers per stage.
  constexpr int64_t sharedBytes() const {
    return stages * ((128 + tileN) * kStepBytes + 16) + kAlignment;
  }
  constexpr bool operator==(const CudaWgmmaMatmulTunables &) const = default;

  /// The autotuner's candidates, the default first: the tiles of the
  /// H200 sweep (docs/cuda.md), K split as the fill estimate says, then
  /// fixed splits for the few-tile shapes and 64-wide tiles.
  static constexpr std::array<CudaWgmmaMatmulTunables, 9> candidates() {
    return {{{},
             {256, 3, 0},
             {128, 4, 0},
             {128, 6, 0},
             {256, 4, 1},
             {128, 6, 2},
             {128, 6, 4},
             {256, 4, 8},
             {64, 8, 1}}};
  }
  std::vector<int64_t> config() const { return {tileN, stages, splitK}; }
  static TuneSpace tuneSpace() {
    TuneSpace space{"cuda.matmul.wgmma", {"tile_n", "stages", "split_k"}, {}};
    for (const CudaWgmmaMatmulTunables &c : candidates())
      space.candidates.push_back(c.config());
    return space;
  }
  static CudaWgmmaMatmulTunables fromConfig(const std::vector<int64_t> &v) {
    return {v.at(0), v.at(1), v.at(2)};
  }
  /// KILN_CUDA_WGMMA=0 keeps sm_90a matmuls on mma.sync (read once).
  static bool enabledByEnvironment() {
    static const bool enabled = switchSetting("KILN_CUDA_WGMMA", true);
    return enabled;
  }
};

} // namespace kiln

#endif
