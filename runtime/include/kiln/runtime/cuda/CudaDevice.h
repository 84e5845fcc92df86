//===- CudaDevice.h - NVIDIA GPUs through the CUDA driver API ---*- C++ -*-===//
//
// libcuda.so.1 is loaded with dlopen at first use, never linked: kiln loads
// and runs on machines without a driver, where there are simply no CUDA
// devices. A kernel fault poisons the device: every later call returns
// device_poisoned at once, as the context cannot be trusted again.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CUDA_CUDADEVICE_H
#define KILN_RUNTIME_CUDA_CUDADEVICE_H

#include "kiln/runtime/common/Error.h"
#include "kiln/runtime/common/GpuPlan.h"
#include "kiln/runtime/common/MemoryPool.h"

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

struct CudaDriver;

struct CudaDeviceProperties {
  std::string name;
  int computeMajor = 0, computeMinor = 0;
  int multiprocessors = 0;
  int maxThreadsPerBlock = 0;
  int warpSize = 0;
  int sharedMemoryPerBlock = 0;      // without opting in
  int sharedMemoryPerBlockOptIn = 0; // the most a kernel can ask for
  size_t totalMemory = 0;
  /// "sm_90" for compute capability 9.0.
  std::string chip() const;
  /// The chip kernels are compiled for: "sm_90a" on 9.0, whose
  /// arch-specific instructions (wgmma) run there alone; chip() elsewhere.
  std::string kernelChip() const;
};

/// A kernel in a loaded module.
struct CudaKernel {
  void *function = nullptr;
};

/// A TMA tensor map as cuTensorMapEncodeTiled takes it: dims, strides and
/// box innermost first (strides in bytes, of dims 1 and up).
struct TiledTensorMap {
  unsigned dataType = 0, rank = 0, swizzle = 0; // CUtensorMapDataType, CUtensorMapSwizzle
  uint64_t address = 0;
  std::array<uint64_t, 5> dims{}, strides{};
  std::array<uint32_t, 5> box{};
};

/// The tensor map of `map` on a buffer at `bufferAddress`, checked against
/// TMA's limits: Unsupported for what TMA cannot express (more than 5
/// dims, strided innermost dim, strides or an address not multiples of 16
/// bytes, boxes past 256 or past the swizzle), InvalidArgument for a map
/// that contradicts itself (a box per dim, positive sizes).
Expected<TiledTensorMap> tiledTensorMap(const TensorMapArgument &map, uint64_t bufferAddress);

/// An encoded tensor map, a kernel parameter of 128 bytes.
struct alignas(64) CudaTensorMap {
  std::array<uint64_t, 16> bits{};
};

class CudaDevice {
public:
  /// How many CUDA devices this machine has: 0, not an error, where the
  /// driver is missing or finds none.
  static int deviceCount();
  /// Why deviceCount() is 0, in words ("libcuda.so.1 not found: ..."); empty
  /// when devices exist.
  static std::string unavailableReason();
  static Expected<std::unique_ptr<CudaDevice>> create(int index);
  ~CudaDevice();

  const CudaDeviceProperties &properties() const { return props; }
  bool poisoned() const { return isPoisoned; }

  /// Loads a module from PTX (the driver JIT-compiles it for this chip) or
  /// from a cubin; the driver's error log goes into the error.
  Expected<void *> loadModule(std::string_view image);
  /// The driver's JIT, ahead of time: a cubin for this device from PTX
  /// (cuLink*), for the disk cache, so later processes load it without JIT.
  Expected<std::string> compileToCubin(std::string_view ptx);
  Expected<CudaKernel> kernel(void *module, const std::string &name);
  /// Lets `kernel` launch with `bytes` of dynamic shared memory (beyond the
  /// default 48 KiB a kernel must opt in); Unsupported past the device's limit.
  Expected<void> allowSharedMemory(CudaKernel kernel, unsigned bytes);
  /// `map` on a buffer at `bufferAddress`, encoded by the driver
  /// (tiledTensorMap's errors; Unsupported on a driver before CUDA 12).
  Expected<CudaTensorMap> encodeTensorMap(const TensorMapArgument &map, uint64_t bufferAddress);
  /// Queues a launch on the device's stream; `args` points at each argument.
  Expected<void> launch(CudaKernel kernel, const LaunchShape &shape,
                        std::vector<void *> &args);

  Expected<uint64_t> allocate(size_t bytes);
  Expected<void> free(uint64_t pointer);
  Expected<void> copyToDevice(uint64_t dst, const void *src, size_t bytes);
  Expected<void> copyToHost(void *dst, uint64_t src, size_t bytes);
  /// Page-locked host memory (staging): copies from and to it run at the
  /// link's DMA rate instead of going through the driver's bounce buffers.
  Expected<void *> allocatePinned(size_t bytes);
  Expected<void> freePinned(void *pointer);
  /// The device's memory pool: pages from allocate(), kept for reuse.
  MemoryPool &pool() { return *memoryPool; }
  /// Waits for queued work; a fault in it poisons the device.
  Expected<void> sync();

  /// A CUDA event recorded at this point of the stream (for timing).
  Expected<void *> recordEvent();
  /// Milliseconds between two recorded events; waits for the stream.
  Expected<double> elapsedMs(void *start, void *end);
  void destroyEvent(void *event);
  /// Whether the work before `event` is done, without waiting (watchdogs).
  Expected<bool> eventDone(void *event);

  /// For a library that queues work on the device's stream itself (NCCL):
  /// makes the device's context current on the calling thread and gives
  /// the stream, so its work is ordered with kiln's launches.
  Expected<void *> currentStream();
  /// Poisons the device from outside the driver (an aborted collective left
  /// the stream's later work reading garbage): `reason` goes into every
  /// later error. Safe from another thread.
  void poison(std::string reason);

  /// Stream capture: launches queued between the two calls are recorded
  /// into a graph instead of running; endCapture gives it instantiated.
  Expected<void> beginCapture();
  Expected<void *> endCapture();
  Expected<void> launchGraph(void *graph);
  void destroyGraph(void *graph);

private:
  CudaDevice(const CudaDriver &driver, int ordinal, void *context, void *stream,
             CudaDeviceProperties props);
  /// Turns a driver result into an error, poisoning on sticky faults.
  Expected<void> check(int result, const char *what);

  const CudaDriver &driver;
  int ordinal;
  void *context;
  void *stream;
  CudaDeviceProperties props;
  std::atomic<bool> isPoisoned = false;
  std::string poisonReason; // written before isPoisoned is set
  std::unique_ptr<MemoryPool> memoryPool; // released before the context
};

} // namespace kiln

#endif
