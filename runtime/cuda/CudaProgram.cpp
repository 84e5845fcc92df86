//===- CudaProgram.cpp - running a GpuPlan on a CUDA device --------------===//
#include "kiln/runtime/cuda/CudaProgram.h"

#include <algorithm>
#include <optional>

namespace kiln {

Expected<std::unique_ptr<CudaProgram>> CudaProgram::load(CudaDevice &device,
                                                         GpuPlan plan) {
  std::vector<void *> modules;
  for (const std::string &ptx : plan.modules) {
    auto module = device.loadModule(ptx);
    if (!module)
      return std::unexpected(module.error());
    modules.push_back(*module);
  }
  std::vector<CudaKernel> kernels;
  for (const KernelLaunch &launch : plan.launches) {
    auto kernel = device.kernel(modules.at(launch.module), launch.kernel);
    if (!kernel)
      return std::unexpected(kernel.error());
    // Opting in at any size: the 48 KiB default counts static shared
    // memory too, so a kernel with exactly 48 KiB dynamic would not launch.
    if (launch.shape.sharedMemoryBytes > 0)
      if (auto ok = device.allowSharedMemory(*kernel, launch.shape.sharedMemoryBytes); !ok)
        return std::unexpected(ok.error());
    kernels.push_back(*kernel);
  }
  return std::unique_ptr<CudaProgram>(
      new CudaProgram(device, std::move(plan), std::move(kernels)));
}

Expected<void> CudaProgram::launchAll(const std::vector<uint64_t> &buffers) {
  return launchAll(plan, buffers);
}

Expected<void> CudaProgram::checkLimits(const GpuPlan &sized) {
  constexpr uint64_t kMaxGrid[3] = {2147483647, 65535, 65535}, kMaxBlock[3] = {1024, 1024, 64};
  constexpr uint64_t kMaxThreads = 1024;
  for (const KernelLaunch &launch : sized.launches) {
    auto beyond = [&](const std::string &what, uint64_t needed, uint64_t allowed) {
      return makeError(ErrorKind::Unsupported,
                       "cuda: kernel " + launch.kernel + " " + what + " is " +
                           std::to_string(needed) + ", beyond CUDA's limit (" +
                           std::to_string(allowed) + ")");
    };
    uint64_t threads = 1;
    for (int d = 0; d < 3; ++d) {
      std::string dim = " in dim " + std::to_string(d);
      if (launch.shape.grid[d] > kMaxGrid[d])
        return beyond("blocks" + dim, launch.shape.grid[d], kMaxGrid[d]);
      if (launch.shape.block[d] > kMaxBlock[d])
        return beyond("block size" + dim, launch.shape.block[d], kMaxBlock[d]);
      threads *= launch.shape.block[d];
    }
    if (threads > kMaxThreads)
      return beyond("threads per block", threads, kMaxThreads);
  }
  return {};
}

Expected<void> CudaProgram::launchAll(const GpuPlan &sized,
                                      const std::vector<uint64_t> &buffers) {
  if (auto ok = checkLimits(sized); !ok)
    return ok;
  for (size_t l = 0; l < sized.launches.size(); ++l) {
    const KernelLaunch &launch = sized.launches[l];
    if (std::ranges::find(launch.shape.grid, 0u) != launch.shape.grid.end())
      continue; // an empty tensor: nothing to do (CUDA refuses empty grids)
    // One 8-byte slot per parameter; the driver reads as many bytes as the
    // kernel declares (little-endian, so narrower scalars read correctly).
    // Tensor maps are 128 bytes, encoded for this launch's buffers.
    std::vector<uint64_t> values(launch.arguments.size());
    std::vector<CudaTensorMap> maps(launch.arguments.size());
    std::vector<void *> params;
    for (size_t a = 0; a < launch.arguments.size(); ++a) {
      const KernelArgument &arg = launch.arguments[a];
      params.push_back(&values[a]);
      if (auto *scalar = std::get_if<ScalarArgument>(&arg)) {
        values[a] = scalar->bits;
      } else if (auto *map = std::get_if<TensorMapArgument>(&arg)) {
        auto encoded = device.encodeTensorMap(*map, buffers[map->view.buffer]);
        if (!encoded)
          return std::unexpected(encoded.error());
        maps[a] = *encoded;
        params.back() = &maps[a];
      } else {
        // Kernels take bare pointers: the view's offset and strides are
        // static in the kernel.
        values[a] = buffers[std::get<BufferView>(arg).buffer];
      }
    }
    if (auto ok = device.launch(kernels[l], launch.shape, params); !ok)
      return ok;
  }
  return {};
}

Expected<void> CudaProgram::run(void **buffers, std::span<const int64_t> dims) {
  // The plan's launches at `dims` (its modules, loaded already, are not
  // copied).
  std::optional<GpuPlan> atDims;
  if (plan.hasRunTimeSizes()) {
    auto at = plan.launchesAt(dims);
    if (!at)
      return std::unexpected(at.error());
    atDims = std::move(*at);
  }
  const GpuPlan &sized = atDims ? *atDims : plan;
  // Buffers come from the device's pool: a program run in a loop allocates
  // device pages once.
  MemoryPool &pool = device.pool();
  std::vector<MemoryPool::Allocation> held;
  auto release = [&] {
    for (const MemoryPool::Allocation &a : held)
      pool.free(a);
  };
  auto failWith = [&](Error e) {
    release();
    return std::unexpected(std::move(e));
  };
  std::vector<uint64_t> device_;
  for (size_t bytes : sized.bufferBytes) {
    auto a = pool.allocate(bytes);
    if (!a)
      return failWith(a.error());
    held.push_back(*a);
    device_.push_back(a->address);
  }
  for (size_t i = 0; i < plan.inputCount; ++i)
    if (auto ok = device.copyToDevice(device_[i], buffers[i], sized.bufferBytes[i]); !ok)
      return failWith(ok.error());
  if (auto ok = launchAll(sized, device_); !ok)
    return failWith(ok.error());
  if (auto ok = device.sync(); !ok)
    return failWith(ok.error());
  for (size_t o = 0; o < plan.outputCount; ++o) {
    size_t b = plan.inputCount + o;
    if (auto ok = device.copyToHost(buffers[b], device_[b], sized.bufferBytes[b]); !ok)
      return failWith(ok.error());
  }
  release();
  return {};
}

} // namespace kiln
