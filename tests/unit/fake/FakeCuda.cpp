//===- FakeCuda.cpp - a libcuda.so.1 with one fake device -----------------===//
//
// For tests of kiln's NCCL failure handling on machines without a GPU
// (tests/unit/FakeNcclTest.cpp): device memory is host memory, the stream
// runs nothing, and events stay pending while fakeCudaHang(1) says so.
//
//===----------------------------------------------------------------------===//
#include "cuda/CudaDriverTypes.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

using namespace kiln::cuda;

static std::atomic<bool> hang{false};

extern "C" {
void fakeCudaHang(int on) { hang = on != 0; }

CUresult cuDeviceGetCount(int *count) {
  *count = 1;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetName(char *name, int size, CUdevice) {
  std::strncpy(name, "kiln fake GPU", size);
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetAttribute(int *value, int, CUdevice) {
  *value = 9;
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice) {
  static int fakeContext;
  *context = &fakeContext;
  return CUDA_SUCCESS;
}
CUresult cuStreamCreate(CUstream *stream, unsigned) {
  static int fakeStream;
  *stream = &fakeStream;
  return CUDA_SUCCESS;
}
CUresult cuMemAlloc_v2(CUdeviceptr *pointer, size_t bytes) {
  *pointer = reinterpret_cast<CUdeviceptr>(std::malloc(bytes));
  return *pointer ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult cuMemFree_v2(CUdeviceptr pointer) {
  std::free(reinterpret_cast<void *>(pointer));
  return CUDA_SUCCESS;
}
CUresult cuEventCreate(CUevent *event, unsigned) {
  *event = std::malloc(1);
  return CUDA_SUCCESS;
}
CUresult cuEventDestroy_v2(CUevent event) {
  std::free(event);
  return CUDA_SUCCESS;
}
CUresult cuEventQuery(CUevent) { return hang ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS; }
}
