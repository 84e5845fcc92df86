//===- DeviceQueue.h - the device side of a Backend ---------------*- C++ -*-===//
//
// Memory, transfers, launches, timing and capture of one device, behind one
// interface: CudaQueue on CUDA (device memory, the device's stream, CUDA
// events, stream capture), VulkanQueue on Vulkan (device memory through a
// VulkanExecutor, timestamp queries, recorded command buffers), HostQueue on
// the CPU (host memory, launches run when made, the host clock).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_BACKEND_DEVICEQUEUE_H
#define KILN_BACKEND_DEVICEQUEUE_H

#include "kiln/backend/Engine.h"

namespace kiln {

class DeviceQueue {
public:
  /// Tensors and graphs keep the queue, and through it the engine with its
  /// device and programs, alive.
  explicit DeviceQueue(std::shared_ptr<Engine> engine) : engine(std::move(engine)) {}
  virtual ~DeviceQueue() = default;
  Engine &kernels() { return *engine; }
  virtual MemoryPool &pool() = 0;
  /// Exact-size allocations outside the pool (persistent ones).
  virtual Expected<uint64_t> allocateExact(size_t bytes) = 0;
  virtual void releaseExact(uint64_t address) = 0;
  virtual Expected<void> write(uint64_t dst, const void *src, size_t bytes) = 0;
  /// Waits for queued work first.
  virtual Expected<void> read(void *dst, uint64_t src, size_t bytes) = 0;
  virtual Expected<void> launch(const Program &program,
                                const std::vector<uint64_t> &buffers) = 0;
  virtual Expected<void> sync() = 0;
  virtual bool poisoned() const = 0;

  /// A point in the device's work, and the milliseconds between two
  /// (waiting for the second).
  virtual Expected<std::shared_ptr<void>> mark() = 0;
  virtual Expected<double> elapsedMs(void *start, void *end) = 0;
  virtual const char *clockName() const = 0;

  /// Whether launches during a capture are recorded by the device (CUDA
  /// graphs); otherwise the Backend records them and replays the list.
  virtual bool capturesNatively() const = 0;
  virtual Expected<void> beginCapture() { return {}; }
  virtual Expected<std::shared_ptr<void>> endCapture() { return nullptr; }
  virtual Expected<void> replay(void *graph) { return {}; }

  virtual Expected<std::shared_ptr<void>> allocateStaging(size_t bytes) = 0;

  /// Persistent allocations, counted for the memory reports.
  Expected<uint64_t> allocatePersistent(size_t bytes);
  void releasePersistent(uint64_t address, size_t bytes);
  PoolReport persistentReport() const;
  MemoryUsage persistentUsage() const;

private:
  std::shared_ptr<Engine> engine;
  size_t persistentLive = 0, persistentPeak = 0, persistentLargest = 0, persistentBytes = 0;
};

/// The queue of `engine`'s device.
Expected<std::shared_ptr<DeviceQueue>> makeDeviceQueue(std::shared_ptr<Engine> engine);

} // namespace kiln

#endif
