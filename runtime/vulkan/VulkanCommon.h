//===- VulkanCommon.h - helpers shared by runtime/vulkan ---------*- C++ -*-===//
#ifndef KILN_RUNTIME_VULKAN_VULKANCOMMON_H
#define KILN_RUNTIME_VULKAN_VULKANCOMMON_H

#include "VulkanApi.h"
#include "kiln/runtime/vulkan/VulkanDevice.h"

#include <span>

namespace kiln {

/// VkResult as an error of the right kind (out of memory, device lost).
Expected<void> checkVk(VkResult r, const char *what);

#define KILN_VK_TRY(call, what)                                                \
  if (auto ok = checkVk(call, what); !ok)                                      \
    return std::unexpected(ok.error());

/// A buffer with its own memory.
struct VulkanBuffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkDeviceSize bytes = 0;
};

/// A buffer of at least `bytes` (rounded up to 16) in memory with `want`.
Expected<VulkanBuffer> createVulkanBuffer(VulkanDevice &device, VkDeviceSize bytes,
                                          VkBufferUsageFlags usage, VkMemoryPropertyFlags want);
void destroyVulkanBuffer(VulkanDevice &device, const VulkanBuffer &buffer);
/// A device-local buffer kernels read and write and copies fill and drain.
Expected<VulkanBuffer> createStorageBuffer(VulkanDevice &device, VkDeviceSize bytes);

/// A barrier between everything `src` wrote and what `dst` reads or writes.
void vulkanBarrier(const VulkanApi &api, VkCommandBuffer cb, VkPipelineStageFlags src,
                   VkAccessFlags srcAccess, VkPipelineStageFlags dst, VkAccessFlags dstAccess);

/// A barrier between all earlier compute and transfer work and all later
/// work, in this command buffer and those submitted after it: launches and
/// copies queued without a wait read what earlier ones wrote and never
/// overwrite what earlier ones still read.
void deviceWorkBarrier(const VulkanApi &api, VkCommandBuffer cb);

/// Submits `commands`, in order, to signal `fence` (reset first).
Expected<void> submitCommands(VulkanDevice &device, std::span<const VkCommandBuffer> commands,
                              VkFence fence);
/// Waits for `fences` (600 s at most: a hang is reported as a lost device).
Expected<void> waitForFences(VulkanDevice &device, std::span<const VkFence> fences);
/// Submits `cb` and waits for it with `fence`.
Expected<void> submitAndWait(VulkanDevice &device, VkCommandBuffer cb, VkFence fence);

} // namespace kiln

#endif
