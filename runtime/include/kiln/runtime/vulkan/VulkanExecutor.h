//===- VulkanExecutor.h - device-resident work on a Vulkan device -*- C++ -*-===//
//
// Memory pages are device-local VkBuffers; a MemoryPool hands out slices of
// them, so an address is (page << 40) + offset. Copies go through a
// host-visible staging buffer. A launch records the program's dispatches on
// the given buffers into a one-shot command buffer and waits for it; while
// capturing, launches are recorded into the graph's command buffer instead,
// each with descriptor sets of its own, and a replay is one submit.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_VULKAN_VULKANEXECUTOR_H
#define KILN_RUNTIME_VULKAN_VULKANEXECUTOR_H

#include "kiln/runtime/common/MemoryPool.h"
#include "kiln/runtime/vulkan/VulkanProgram.h"

#include <functional>
#include <map>

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
  /// Runs `program` on the buffers at `addresses` (one per plan buffer) and
  /// waits; while capturing, records it into the graph instead.
  Expected<void> launch(VulkanProgram &program, const std::vector<uint64_t> &addresses);
  /// The device's clock in nanoseconds, read after all earlier work.
  Expected<double> timestampNs();
  bool hasTimestamps() const;

  Expected<void> beginCapture();
  /// The captured command buffer (with its descriptor sets), ready to replay.
  Expected<std::shared_ptr<void>> endCapture();
  Expected<void> replay(void *graph);
  bool lost() const { return deviceLost; }

  struct Resources; // Vulkan handles, in VulkanExecutor.cpp
  struct Graph;

private:
  explicit VulkanExecutor(VulkanDevice &device);
  Expected<void> submit(void *commandBuffer);
  /// Records into the one-shot command buffer, submits it and waits.
  Expected<void> runOneShot(const std::function<Expected<void>(VkCommandBuffer_T *)> &record);
  Expected<VulkanProgram::Binding> resolve(uint64_t address) const;
  Expected<void> ensureStaging(size_t bytes);
  VulkanDevice &device;
  std::unique_ptr<Resources> vk;
  std::unique_ptr<MemoryPool> memoryPool; // released before the pages' device
  std::shared_ptr<Graph> capturing;
  bool deviceLost = false;
};

} // namespace kiln

#endif
