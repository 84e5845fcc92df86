//===- TuneSpaces.h - every kernel template's tune space --------*- C++ -*-===//
//
// The tunable templates, for the autotuner, kiln-tune's validate and the
// engine's tune table. Plain C++ (no MLIR).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LOWERING_TUNESPACES_H
#define KILN_LOWERING_TUNESPACES_H

#include "kiln/Lowering/CPU/AttentionTunables.h"
#include "kiln/Lowering/CPU/MatmulTunables.h"
#include "kiln/Lowering/CUDA/MatmulTunables.h"
#include "kiln/Lowering/GPU/KernelTunables.h"
#include "kiln/Lowering/SPIRV/MatmulTunables.h"

namespace kiln {

inline std::vector<TuneSpace> kernelTuneSpaces() {
  return {CudaMmaMatmulTunables::tuneSpace(), CudaWgmmaMatmulTunables::tuneSpace(),
          GpuSimtMatmulTunables::tuneSpace(),
          CpuMatmulTunables::tuneSpace(), VulkanCoopMatmulTunables::tuneSpace(),
          GpuMapLoopsTunables::tuneSpace(), GpuRowReductionTunables::tuneSpace(),
          CpuAttentionTunables::tuneSpace()};
}

} // namespace kiln

#endif
