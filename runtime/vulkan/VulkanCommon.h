//===- VulkanCommon.h - helpers shared by runtime/vulkan ---------*- C++ -*-===//
#ifndef KILN_RUNTIME_VULKAN_VULKANCOMMON_H
#define KILN_RUNTIME_VULKAN_VULKANCOMMON_H

#include "VulkanApi.h"
#include "kiln/runtime/vulkan/VulkanDevice.h"

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

/// Submits `cb` and waits for it with `fence` (600 s at most: a hang is
/// reported as a lost device).
Expected<void> submitAndWait(VulkanDevice &device, VkCommandBuffer cb, VkFence fence);

} // namespace kiln

#endif
