//===- DeviceQueue.h - the device side of a Backend ---------------*- C++ -*-===//
//
// Memory, transfers, launches, timing and capture of one device, behind one
// interface; each target makes its own (Target::makeQueue, in
// targets/<kind>/): device memory, the device's stream, CUDA events and
// stream capture on CUDA; device memory through a VulkanExecutor, timestamp
// queries and recorded command buffers on Vulkan; host memory, launches run
// when made and the host clock on the CPU.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_BACKEND_DEVICEQUEUE_H
#define KILN_BACKEND_DEVICEQUEUE_H

#include "kiln/backend/Engine.h"
#include "kiln/runtime/common/MemoryPool.h"

#include <memory>
#include <mutex>
#include <vector>

namespace kiln {

/// The run-time sizes of one launch of a program with `?` dims (empty for a
/// static program): every dim of its inputs, then of its outputs (what a CPU
/// entry reads), and a GPU program's plan evaluated at them (grids, size
/// parameters, buffer bytes). A graph keeps those it was captured with.
struct LaunchSizes {
  std::vector<int64_t> dims;
  std::shared_ptr<const GpuPlan> plan;
};

/// A GPU program's plan at the dims of its last launch, kept while they
/// repeat (the steps of a decode loop at one batch): evaluating the sizes
/// and copying every launch of the plan, each launch again, kept a `?`-rows
/// bf16 decode matmul host-bound on an H100.
class LastLaunchSizes {
public:
  /// The sizes at `dims`: the last ones where the dims repeat, else
  /// `evaluate(dims)` (an Expected<GpuPlan>), kept for the next launch.
  template <class Evaluate>
  Expected<LaunchSizes> at(std::vector<int64_t> dims, Evaluate evaluate) const {
    {
      std::lock_guard lock(mutex);
      if (last.plan && last.dims == dims)
        return last;
    }
    Expected<GpuPlan> plan = evaluate(dims);
    if (!plan)
      return std::unexpected(plan.error());
    LaunchSizes sizes{std::move(dims), std::make_shared<const GpuPlan>(std::move(*plan))};
    std::lock_guard lock(mutex);
    last = sizes;
    return sizes;
  }

private:
  mutable std::mutex mutex;
  mutable LaunchSizes last;
};

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
  /// The sizes of a launch of `program` (one this queue's target made, with
  /// `?` dims) whose every dim is in `dims`; an error where the device cannot
  /// run it at those sizes (a grid beyond its limits).
  virtual Expected<LaunchSizes> sizesOf(const Program &program, std::vector<int64_t> dims) {
    return LaunchSizes{std::move(dims), nullptr};
  }
  /// Queues `program` (one this queue's target made) on device buffers:
  /// inputs, outputs, then its temporaries, at `sizes` (sizesOf's, for a
  /// program with `?` dims).
  virtual Expected<void> launch(const Program &program, const std::vector<uint64_t> &buffers,
                                const LaunchSizes &sizes) = 0;
  virtual Expected<void> sync() = 0;
  /// Pushes launches the queue holds back (Vulkan batches) to the device.
  virtual Expected<void> flush() { return {}; }
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

/// The bytes of a GPU program's temporaries: the buffers between its
/// kernels, which a launch on device buffers takes after the outputs (at
/// the launch's sizes where the plan has run-time sizes).
inline std::vector<size_t> temporaryBytesOf(const GpuPlan &plan) {
  return {plan.bufferBytes.begin() + plan.inputCount + plan.outputCount,
          plan.bufferBytes.end()};
}

/// Host memory for tensors and staging, refused up front beyond the
/// machine's RAM (with overcommit it would "succeed" and the process would
/// be killed when the kernel touches it).
Expected<uint64_t> allocateHost(size_t bytes);
void freeHost(uint64_t address);
Expected<std::shared_ptr<void>> allocateHostStaging(size_t bytes);
/// A mark of the host clock, in milliseconds, and the time between two
/// marks of milliseconds.
std::shared_ptr<void> hostClockMark();
double millisecondsBetween(void *start, void *end);

} // namespace kiln

#endif
