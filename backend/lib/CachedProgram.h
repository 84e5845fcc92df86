//===- CachedProgram.h - compiled programs as disk cache entries -*- C++ -*-===//
//
// What the disk cache keeps of a compiled program, per target: the CPU's
// relocatable object; CUDA's cubins (never PTX, which the driver would JIT
// again); Vulkan's SPIR-V and the driver's pipeline-cache data. Beside the
// binaries, JSON metadata: signature, launches (the GpuPlan), shared memory,
// stage times. Decoding checks what the runtime relies on (indices in
// range), as entries come from a directory other processes write. MLIR-free.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_BACKEND_CACHEDPROGRAM_H
#define KILN_BACKEND_CACHEDPROGRAM_H

#include "kiln/Lowering/Compiler.h"
#include "kiln/runtime/common/DiskCache.h"

namespace kiln {

struct CachedProgram {
  CompiledProgram program;
  std::string object;        // cpu
  GpuPlan plan;              // cuda (cubins), vulkan (SPIR-V)
  std::string pipelineCache; // vulkan: vkGetPipelineCacheData
};

/// `kind` is "cpu", "cuda" or "vulkan"; decode refuses an entry of another.
CacheEntry encodeCachedProgram(std::string_view kind, const CachedProgram &program);
Expected<CachedProgram> decodeCachedProgram(std::string_view kind, const CacheEntry &entry);

} // namespace kiln

#endif
