//===- CudaDriverTypes.h - the CUDA driver ABI kiln uses --------*- C++ -*-===//
//
// The few types and constants of cuda.h that kiln's calls need, so that kiln
// builds without the CUDA toolkit and never links the driver (it is loaded
// with dlopen: CudaDriverSymbols.def). Values are the driver API's.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_THIRD_PARTY_CUDA_CUDADRIVERTYPES_H
#define KILN_THIRD_PARTY_CUDA_CUDADRIVERTYPES_H

#include <cstddef>

namespace kiln::cuda {

using CUresult = int;
using CUdevice = int;
using CUcontext = void *;
using CUstream = void *;
using CUmodule = void *;
using CUfunction = void *;
using CUevent = void *;
using CUgraph = void *;
using CUgraphExec = void *;
using CUlinkState = void *;
using CUdeviceptr = unsigned long long;

enum : int {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_READY = 600, // cuEventQuery: not yet
  CUDA_ERROR_ILLEGAL_ADDRESS = 700,
  // 714..719: hardware stack error ... launch failed; like 700, sticky.
  CUDA_ERROR_HARDWARE_STACK_ERROR = 714,
  CUDA_ERROR_LAUNCH_FAILED = 719,
};

// CUjit_option
enum : int { CU_JIT_ERROR_LOG_BUFFER = 5, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6 };

// CUjitInputType
enum : int { CU_JIT_INPUT_PTX = 1 };

// CUdevice_attribute
enum : int {
  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
  CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
};

// CUfunction_attribute
enum : int { CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8 };

// CUstreamCaptureMode
enum : int { CU_STREAM_CAPTURE_MODE_RELAXED = 2 };

// cuTensorMapEncodeTiled (CUDA 12): the map, and its enums' values kiln uses.
struct alignas(64) CUtensorMap {
  unsigned long long opaque[16];
};
enum : int { CU_TENSOR_MAP_DATA_TYPE_UINT8 = 0, CU_TENSOR_MAP_DATA_TYPE_UINT16 = 1,
             CU_TENSOR_MAP_DATA_TYPE_UINT32 = 2, CU_TENSOR_MAP_DATA_TYPE_UINT64 = 4 };
enum : int { CU_TENSOR_MAP_INTERLEAVE_NONE = 0 };
// CUtensorMapSwizzle: none, 32, 64, 128 bytes are 0..3.
enum : int { CU_TENSOR_MAP_L2_PROMOTION_L2_256B = 3 };
enum : int { CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0 }; // zeros

} // namespace kiln::cuda

#endif
