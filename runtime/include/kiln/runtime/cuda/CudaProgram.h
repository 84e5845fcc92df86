//===- CudaProgram.h - running a GpuPlan on a CUDA device -------*- C++ -*-===//
#ifndef KILN_RUNTIME_CUDA_CUDAPROGRAM_H
#define KILN_RUNTIME_CUDA_CUDAPROGRAM_H

#include "kiln/runtime/cuda/CudaDevice.h"
#include "kiln/runtime/common/GpuPlan.h"

#include <memory>

namespace kiln {

/// A GPU plan with its modules loaded on one device.
class CudaProgram {
public:
  static Expected<std::unique_ptr<CudaProgram>> load(CudaDevice &device,
                                                     GpuPlan plan);
  /// Copies the inputs in, runs every launch, waits, copies the outputs out.
  /// `buffers` holds one host pointer per input, then per output; `dims`
  /// every dim of them (read where the plan has run-time sizes).
  Expected<void> run(void **buffers, std::span<const int64_t> dims = {});
  /// Queues every launch on device buffers already in place (one per buffer
  /// of the plan); does not wait.
  Expected<void> launchAll(const std::vector<uint64_t> &deviceBuffers);
  /// launchAll of `sized`: the plan, or (a plan with run-time sizes) its
  /// launchesAt() of one run.
  Expected<void> launchAll(const GpuPlan &sized, const std::vector<uint64_t> &deviceBuffers);
  const GpuPlan &gpuPlan() const { return plan; }
  /// Unsupported, naming the kernel and the limit, where a launch of
  /// `sized` exceeds CUDA's grid (2^31-1 x 65535 x 65535 blocks) or block
  /// (1024 x 1024 x 64, 1024 threads) limits, rather than the driver's bare
  /// CUDA_ERROR_INVALID_VALUE (a batched matmul of more than 65535 batches).
  static Expected<void> checkLimits(const GpuPlan &sized);

private:
  CudaProgram(CudaDevice &device, GpuPlan plan, std::vector<CudaKernel> kernels)
      : device(device), plan(std::move(plan)), kernels(std::move(kernels)) {}
  CudaDevice &device;
  GpuPlan plan;
  std::vector<CudaKernel> kernels; // one per launch
};

} // namespace kiln

#endif
