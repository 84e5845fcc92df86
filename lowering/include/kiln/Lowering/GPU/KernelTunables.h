//===- KernelTunables.h - tunables of the shared GPU kernels ----*- C++ -*-===//
//
// The one declaration of the tunables of the kernel templates both GPU
// targets share: index-map kernels (kiln-gpu-map-loops), row reductions
// (kiln-gpu-row-reductions) and the SIMT matmul (GPU/SimtMatmul.h).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LOWERING_GPU_KERNELTUNABLES_H
#define KILN_LOWERING_GPU_KERNELTUNABLES_H

#include "kiln/Lowering/Common/VectorizeTunables.h"
#include "kiln/runtime/common/Tuning.h"

#include <array>
#include <cstdint>

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

/// The SIMT matmul (f32/f16/bf16 inputs, f32 C, run-time sizes too; on
/// CUDA what the tensor-core kernels do not take, on Vulkan what the
/// cooperative-matrix one does not):
/// `tile` x `tile` outputs per block of (tile / perThread)^2 threads, each
/// thread perThread x perThread of them in registers; K advances `step` at
/// a time through two workgroup buffers (the next step's loads in flight
/// while the current one computes). Static sizes may cut K into `splitK`
/// parts, each a block of its own, whose partial sums a second kernel adds.
struct GpuSimtMatmulTunables {
  int64_t tile = 128;     // 32, 64 or 128
  int64_t step = 16;      // K per step: 8 or 16
  int64_t perThread = 8;  // 4 or 8
  int64_t splitK = 1;     // 1 to kMaxSplitK

  static constexpr int64_t kMaxSplitK = 16;

  constexpr int64_t threads() const { return (tile / perThread) * (tile / perThread); }
  /// Workgroup memory: two stages of A's and B's f32 slices.
  constexpr int64_t workgroupBytes() const { return 2 * 2 * step * tile * 4; }
  /// Elements of A and of B each thread stages per step.
  constexpr int64_t perLoad() const { return tile * step / threads(); }
  /// Whether the kernel can take this tiling: whole 4-wide groups, 64 to
  /// 1024 threads, each staging a whole run of at most 8 elements.
  constexpr bool valid() const {
    return (perThread == 4 || perThread == 8) && tile % perThread == 0 &&
           threads() >= 64 && threads() <= 1024 && tile * step % threads() == 0 &&
           perLoad() <= 8 && step % perLoad() == 0 && splitK >= 1 && splitK <= kMaxSplitK;
  }
  constexpr bool operator==(const GpuSimtMatmulTunables &) const = default;

  /// The tiling for fewer blocks than fill the GPU: 64 x 64 outputs per
  /// block of 256 threads.
  static constexpr GpuSimtMatmulTunables narrow() { return {64, 16, 4}; }
  /// The untuned tiling of a `batch` x `m` x `n` output over a K of `k`
  /// (static sizes) on a GPU of `fillBlocks` SMs: the default where it
  /// launches at least `fillBlocks` blocks; else, for outputs of more than
  /// 64 rows and columns where the default's tiles fit the device
  /// (`defaultFits`) and alone fill less than 3/4 of the SMs, those tiles
  /// with K cut into the 2 to kMaxUntunedSplitK parts (each at least
  /// kMinWidePartK long) that best fill whole waves of `fillBlocks` blocks
  /// (fewer parts on a tie), where that fills at least 3/4 of them; else K
  /// cut into parts of at least kMinPartK (at most kMaxUntunedSplitK of
  /// them): 32 x 32 tiles in kMaxUntunedSplitK parts where the rows are at
  /// most 32, narrow() tiles in parts where those alone launch too few
  /// blocks, narrow() unsplit otherwise. Always one of candidates() (the
  /// tuner times it first).
  /// Fitted to kiln-tune's timings on the H200 and the H100 (docs/cuda.md:
  /// a decode step's 16 x 4096 x 4096 0.21 -> 0.055 ms; 128 x 11008 x 4096
  /// 0.43 -> 0.31 ms in 3 parts of 128 x 128 tiles, 1024^3 0.074 -> 0.060
  /// ms in 2; fewer parts on 32 x 32 tiles are slower than on narrow() ones).
  static constexpr GpuSimtMatmulTunables forOutput(int64_t batch, int64_t m, int64_t n,
                                                    int64_t k, int64_t fillBlocks,
                                                    bool defaultFits = true) {
    constexpr GpuSimtMatmulTunables wide{};
    auto blocksOf = [&](const GpuSimtMatmulTunables &t) {
      return batch * ((m + t.tile - 1) / t.tile) * ((n + t.tile - 1) / t.tile);
    };
    const int64_t wideBlocks = blocksOf(wide);
    if (wideBlocks >= fillBlocks)
      return wide;
    if (m > 64 && n > 64 && defaultFits && 4 * wideBlocks < 3 * fillBlocks) {
      // The slots of the whole waves that `blocks` blocks take: blocks /
      // slots is the share of them that works.
      auto slotsOf = [&](int64_t blocks) {
        return (blocks + fillBlocks - 1) / fillBlocks * fillBlocks;
      };
      GpuSimtMatmulTunables best = wide;
      int64_t bestBlocks = 0, bestSlots = 1; // none yet
      for (const GpuSimtMatmulTunables &c : candidates()) {
        if (c.tile != wide.tile || c.step != wide.step || c.perThread != wide.perThread ||
            c.splitK == 1 || c.splitK > kMaxUntunedSplitK || k / c.splitK < kMinWidePartK)
          continue;
        int64_t blocks = wideBlocks * c.splitK, slots = slotsOf(blocks);
        if (blocks * bestSlots > bestBlocks * slots) { // strictly better: fewer parts on a tie
          best = c;
          bestBlocks = blocks;
          bestSlots = slots;
        }
      }
      if (bestBlocks > 0 && 4 * bestBlocks >= 3 * bestSlots)
        return best;
    }
    int64_t splits = 1;
    while (splits * 2 <= kMaxUntunedSplitK && k / (splits * 2) >= kMinPartK)
      splits *= 2;
    if (splits == kMaxUntunedSplitK && m <= 32)
      return {32, 8, 4, splits};
    GpuSimtMatmulTunables chosen = narrow();
    if (blocksOf(chosen) < fillBlocks)
      chosen.splitK = splits;
    return chosen;
  }
  static constexpr int64_t kMinPartK = 512, kMinWidePartK = 256, kMaxUntunedSplitK = 8;
  /// A matmul whose rows alone are known only at run time takes, up to
  /// each of these row counts, the tiling forOutput gives that many rows
  /// (rowBuckets: a decode step of 16 x 4096 x 4096 the 32 x 32 tiles in
  /// 8 parts, not 64 x 64 ones over all of K).
  static constexpr std::array<int64_t, 3> kRowBuckets{32, 128, 512};
  /// The autotuner's candidates, the default first; the smaller tiles and
  /// the parts of K give skinny and small matmuls more blocks.
  static constexpr std::array<GpuSimtMatmulTunables, 18> candidates() {
    return {{{},
             {128, 8, 8},
             {128, 16, 8, 2},
             {128, 16, 8, 3},
             {128, 16, 8, 4},
             {128, 16, 8, 8},
             narrow(),
             {64, 8, 4},
             {64, 8, 8},
             {32, 8, 4},
             {64, 16, 4, 2},
             {64, 16, 4, 4},
             {64, 16, 4, 8},
             {64, 16, 4, 16},
             {32, 8, 4, 8},
             {32, 8, 4, 16},
             {32, 16, 4, 8},
             {32, 16, 4, 16}}};
  }
  std::vector<int64_t> config() const { return {tile, step, perThread, splitK}; }
  static TuneSpace tuneSpace() {
    TuneSpace space{"gpu.matmul.simt", {"tile", "step", "per_thread", "split_k"}, {}};
    for (const GpuSimtMatmulTunables &c : candidates())
      space.candidates.push_back(c.config());
    return space;
  }
  static GpuSimtMatmulTunables fromConfig(const std::vector<int64_t> &v) {
    return {v.at(0), v.at(1), v.at(2), v.at(3)};
  }
};

} // namespace kiln

#endif
