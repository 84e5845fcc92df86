//===- MatmulTunables.h - tunables of Vulkan's matmul kernel ----*- C++ -*-===//
//
// The one declaration of kiln-spirv-tile-matmul's tiling (cooperative
// matrices): the pass and the autotuner read it. Plain C++ (no MLIR).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LOWERING_SPIRV_MATMULTUNABLES_H
#define KILN_LOWERING_SPIRV_MATMULTUNABLES_H

#include "kiln/runtime/common/Tuning.h"

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

namespace kiln {

/// What a tiling must fit: the device's f16 x f16 -> f32 cooperative-matrix
/// shape, its subgroup size and its workgroup limits.
struct VulkanCoopMatmulDevice {
  int64_t mmaM, mmaN, mmaK, subgroupSize;
  int64_t maxInvocations = 1024, maxWorkgroupBytes = 49152;
};

/// A workgroup of subgroupsM x subgroupsN subgroups owns tileM x tileN
/// outputs, each subgroup (tileM / subgroupsM) x (tileN / subgroupsN) of
/// them as accumulators; K advances stepK at a time through two
/// workgroup-memory stages, each invocation's global loads issued
/// `prefetch` steps before their step (held in registers meanwhile).
struct VulkanCoopMatmulTunables {
  int64_t tileM = 128, tileN = 256;
  int64_t subgroupsM = 2, subgroupsN = 8;
  int64_t stepK = 16;
  int64_t prefetch = 4;

  /// f16 per global load and per stage element: 8 bytes.
  static constexpr int64_t kLanes = 4;
  /// Stage rows are padded by 16 bytes, so the 8 rows a matrix load reads
  /// start in different banks.
  static constexpr int64_t kPadding = 8;

  constexpr int64_t subgroups() const { return subgroupsM * subgroupsN; }
  constexpr int64_t subgroupTileM() const { return tileM / subgroupsM; }
  constexpr int64_t subgroupTileN() const { return tileN / subgroupsN; }
  constexpr int64_t aStride() const { return stepK + kPadding; }
  constexpr int64_t bStride() const { return tileN + kPadding; }
  /// Workgroup memory: both stages of A and B (f16) and a per-subgroup f32
  /// scratch of one `mmaM` x `mmaN` accumulator.
  constexpr int64_t workgroupBytes(int64_t mmaM, int64_t mmaN) const {
    return 2 * (tileM * aStride() + stepK * bStride()) * 2 + subgroups() * mmaM * mmaN * 4;
  }
  /// Whether device `d` can run the tiling: whole matrices per subgroup
  /// tile and K step, stage columns (vectors of kLanes) holding whole
  /// matrix columns, every invocation staging the same number of loads,
  /// within the workgroup limits.
  constexpr bool fits(const VulkanCoopMatmulDevice &d) const {
    if (d.mmaM <= 0 || d.mmaN <= 0 || d.mmaK <= 0 || d.subgroupSize <= 0 || prefetch < 1 ||
        tileM % subgroupsM != 0 || tileN % subgroupsN != 0)
      return false;
    int64_t threads = subgroups() * d.subgroupSize;
    return subgroupTileM() % d.mmaM == 0 && subgroupTileN() % d.mmaN == 0 &&
           stepK % d.mmaK == 0 && d.mmaK % kLanes == 0 && d.mmaN % kLanes == 0 &&
           (tileM * stepK / kLanes) % threads == 0 && (stepK * tileN / kLanes) % threads == 0 &&
           threads <= d.maxInvocations && workgroupBytes(d.mmaM, d.mmaN) <= d.maxWorkgroupBytes;
  }

  /// The autotuner's candidates, the default first (the fastest of the
  /// H200 sweep in docs/vulkan.md), then its runners-up (one for subgroups
  /// of 64) and smaller tiles for matmuls of few tiles.
  static constexpr std::array<VulkanCoopMatmulTunables, 8> candidates() {
    return {{{},
             {128, 256, 4, 4, 16, 4},
             {128, 256, 2, 8, 16, 2},
             narrow(),
             {128, 128, 2, 4, 32, 1},
             {64, 128, 1, 4, 32, 4},
             {128, 64, 2, 2, 32, 4},
             {64, 64, 2, 2, 16, 2}}};
  }
  /// The device's default: the first candidate it can run.
  static constexpr std::optional<VulkanCoopMatmulTunables>
  forDevice(const VulkanCoopMatmulDevice &d) {
    for (const VulkanCoopMatmulTunables &c : candidates())
      if (c.fits(d))
        return c;
    return std::nullopt;
  }
  /// Workgroups below which the default's tiles leave a large GPU idle
  /// (the H200 has 132 SMs, one default workgroup each).
  static constexpr int64_t kFillWorkgroups = 128;
  /// The tiling for fewer tiles than kFillWorkgroups: 128 x 128.
  static constexpr VulkanCoopMatmulTunables narrow() { return {128, 128, 2, 4, 32, 4}; }
  /// The untuned tiling of a `batch` x `m` x `n` output: the device's
  /// default, or narrow() where the default would launch fewer than
  /// kFillWorkgroups workgroups and the device can run it (on the H200,
  /// docs/vulkan.md: 1.2-1.7x faster for 512x4096x4096, 1024^3, 4096x128,
  /// 16x4096 and 8 x 512^3; 5% slower for 128x4096x11008).
  static constexpr std::optional<VulkanCoopMatmulTunables>
  forOutput(const VulkanCoopMatmulDevice &d, int64_t batch, int64_t m, int64_t n) {
    std::optional<VulkanCoopMatmulTunables> wide = forDevice(d);
    if (!wide)
      return wide;
    int64_t workgroups =
        batch * ((m + wide->tileM - 1) / wide->tileM) * ((n + wide->tileN - 1) / wide->tileN);
    return workgroups < kFillWorkgroups && narrow().fits(d) ? narrow() : *wide;
  }
  /// The tiling as its tune space's config.
  std::vector<int64_t> config() const {
    return {tileM, tileN, subgroupsM, subgroupsN, stepK, prefetch};
  }
  static TuneSpace tuneSpace() {
    TuneSpace space{"vulkan.matmul.coopmat",
                    {"tile_m", "tile_n", "subgroups_m", "subgroups_n", "step_k", "prefetch"},
                    {}};
    for (const VulkanCoopMatmulTunables &c : candidates())
      space.candidates.push_back(c.config());
    return space;
  }
  static VulkanCoopMatmulTunables fromConfig(const std::vector<int64_t> &v) {
    return {v.at(0), v.at(1), v.at(2), v.at(3), v.at(4), v.at(5)};
  }
};

} // namespace kiln

#endif
