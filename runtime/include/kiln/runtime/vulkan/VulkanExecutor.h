//===- VulkanExecutor.h - device-resident work on a Vulkan device -*- C++ -*-===//
//
// Memory pages are device-local VkBuffers; a MemoryPool hands out slices of
// them, so an address is (page << 40) + offset. Work is queued without
// waiting: launches and uploads are recorded into the open batch (a command
// buffer with its descriptor pools and host-visible staging), which is
// submitted when the device has nothing else to do, when it holds
// kLaunchesPerBatch launches, or on flush, sync, a read or a timestamp. A
// submitted batch keeps everything its commands use until its fence says
// it is done, then returns to the free list. A barrier after every launch
// and copy orders each against all earlier work. A read waits for its own
// copy (and so for the work queued before it), sync for everything. While
// capturing, launches are recorded into the graph's command buffer instead,
// each with descriptor sets of its own, and a replay is one more submission.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_VULKAN_VULKANEXECUTOR_H
#define KILN_RUNTIME_VULKAN_VULKANEXECUTOR_H

#include "kiln/runtime/common/MemoryPool.h"
#include "kiln/runtime/vulkan/VulkanProgram.h"

namespace kiln {

class VulkanExecutor {
public:
  static Expected<std::unique_ptr<VulkanExecutor>> create(VulkanDevice &device);
  ~VulkanExecutor();

  MemoryPool &pool() { return *memoryPool; }
  /// One exact-size page (the pool's page source, and persistent buffers).
  Expected<uint64_t> allocatePage(size_t bytes);
  void releasePage(uint64_t address);

  Expected<void> write(uint64_t dst, const void *src, size_t bytes);
  Expected<void> read(void *dst, uint64_t src, size_t bytes);
  /// Queues `program` on the buffers at `addresses` (one per plan buffer),
  /// at `sized` where it has run-time sizes (VulkanProgram::record); while
  /// capturing, records it into the graph instead.
  Expected<void> launch(VulkanProgram &program, const std::vector<uint64_t> &addresses,
                        const GpuPlan *sized = nullptr);
  /// Submits the open batch.
  Expected<void> flush();
  /// Waits for all queued work; a device fault met on the way is the error.
  Expected<void> sync();
  /// The device's clock in nanoseconds, read after all earlier work.
  Expected<double> timestampNs();
  bool hasTimestamps() const;

  Expected<void> beginCapture();
  /// The captured command buffer (with its descriptor sets), ready to replay.
  Expected<std::shared_ptr<void>> endCapture();
  Expected<void> replay(void *graph);
  bool lost() const { return deviceLost; }

  /// A batch is submitted once it holds this many launches.
  static constexpr uint32_t kLaunchesPerBatch = 64;
  /// Beyond this many submitted batches, the host waits for the oldest.
  static constexpr size_t kMaxBatchesInFlight = 8;
  /// A transfer larger than this waits for the work queued before it and
  /// frees the idle batches' large staging first, so that host-visible
  /// memory holds at most a couple of large transfers, not one per batch.
  static constexpr size_t kLargeTransferBytes = 16 << 20;

  struct Resources; // Vulkan handles, in VulkanExecutor.cpp
  struct Batch;
  struct Graph;

private:
  explicit VulkanExecutor(VulkanDevice &device);
  /// The batch being recorded (a free or new one begun if none is).
  Expected<Batch *> openBatch();
  /// The open batch, with `bytes` of staging free at its `stagingUsed`.
  Expected<Batch *> openBatchWithStaging(size_t bytes);
  /// Submits the open batch, then `replayed` (a graph's commands) if given.
  Expected<void> submitOpen(VkCommandBuffer_T *replayed = nullptr);
  /// Submits the open batch when the device is idle or the batch is full.
  Expected<void> submitIfDue();
  /// Waits for `batch` (submitted) and every batch before it.
  Expected<void> waitFor(const Batch &batch);
  /// Returns finished batches to the free list.
  Expected<void> recycle();
  /// A failed Vulkan call: a lost device is sticky.
  Expected<void> noteFailure(Expected<void> result);
  Expected<VulkanProgram::Binding> resolve(uint64_t address) const;
  VulkanDevice &device;
  std::unique_ptr<Resources> vk;
  std::unique_ptr<MemoryPool> memoryPool; // released before the pages' device
  std::shared_ptr<Graph> capturing;
  bool deviceLost = false;
};

} // namespace kiln

#endif
