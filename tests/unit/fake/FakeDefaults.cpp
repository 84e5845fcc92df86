//===- FakeDefaults.cpp - every driver/NCCL entry point, doing nothing ----===//
//
// Weak definitions of every function kiln's symbol tables name, returning
// success (0); FakeCuda.cpp and FakeNccl.cpp define the ones whose
// behaviour a test relies on. Generated from the tables themselves, so a
// symbol added there is here too.
//
//===----------------------------------------------------------------------===//
#include "cuda/CudaDriverTypes.h"
#include "nccl/NcclTypes.h"

using namespace kiln::cuda;
using namespace kiln::nccl;

extern "C" {
#ifdef KILN_FAKE_CUDA
#define KILN_CUDA_DRIVER_SYMBOL(member, symbol, parameters)                    \
  __attribute__((weak)) CUresult symbol parameters { return 0; }
#include "cuda/CudaDriverSymbols.def"
#undef KILN_CUDA_DRIVER_SYMBOL
#else
#define KILN_NCCL_SYMBOL(member, symbol, result, parameters)                   \
  __attribute__((weak)) result symbol parameters { return {}; }
#include "nccl/NcclSymbols.def"
#undef KILN_NCCL_SYMBOL
#endif
}
