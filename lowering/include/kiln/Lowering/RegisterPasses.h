//===- RegisterPasses.h - every kiln lowering pass and pipeline -*- C++ -*-===//
#ifndef KILN_LOWERING_REGISTERPASSES_H
#define KILN_LOWERING_REGISTERPASSES_H

#include "kiln/Lowering/CPU/Passes.h"
#include "kiln/Lowering/CUDA/Passes.h"
#include "kiln/Lowering/Common/Passes.h"
#include "kiln/Lowering/GPU/Passes.h"
#include "kiln/Lowering/KilnToLinalg/Passes.h"
#include "kiln/Lowering/SPIRV/Passes.h"

namespace kiln {

/// Registers kiln's lowering passes and named pipelines (for kiln-opt).
inline void registerKilnLoweringPasses() {
  registerKilnToLinalgPasses();
  registerKilnCommonPasses();
  registerKilnGpuPasses();
  registerKilnCpuPasses();
  registerKilnCudaPasses();
  registerKilnSpirvPasses();
  registerKilnCommonPipelines();
  registerKilnCpuPipelines();
  registerKilnCudaPipelines();
  registerKilnSpirvPipelines();
}

} // namespace kiln

#endif
