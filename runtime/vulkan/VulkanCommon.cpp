//===- VulkanCommon.cpp - helpers shared by runtime/vulkan ---------------===//
#include "VulkanCommon.h"

#include <algorithm>

namespace kiln {

Expected<void> checkVk(VkResult r, const char *what) {
  if (r == VK_SUCCESS)
    return {};
  if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
    return makeError(ErrorKind::OutOfMemory, describeVkResult(what, r));
  if (r == VK_ERROR_DEVICE_LOST)
    return makeError(ErrorKind::DevicePoisoned, describeVkResult(what, r));
  return makeError(ErrorKind::Launch, describeVkResult(what, r));
}

Expected<VulkanBuffer> createVulkanBuffer(VulkanDevice &device, VkDeviceSize bytes,
                                          VkBufferUsageFlags usage, VkMemoryPropertyFlags want) {
  const VulkanApi &api = device.api();
  VkDevice d = static_cast<VkDevice>(device.handle());
  VulkanBuffer b;
  b.bytes = std::max<VkDeviceSize>(16, (bytes + 15) / 16 * 16);
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = b.bytes;
  info.usage = usage;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  KILN_VK_TRY(api.vkCreateBuffer(d, &info, nullptr, &b.buffer), "vkCreateBuffer");
  VkMemoryRequirements req;
  api.vkGetBufferMemoryRequirements(d, b.buffer, &req);
  int type = device.memoryType(req.memoryTypeBits, want);
  if (type < 0) {
    api.vkDestroyBuffer(d, b.buffer, nullptr);
    return makeError(ErrorKind::Unsupported,
                     "vulkan: no memory type with flags " + std::to_string(want));
  }
  VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  alloc.allocationSize = req.size;
  alloc.memoryTypeIndex = static_cast<uint32_t>(type);
  if (auto ok = checkVk(api.vkAllocateMemory(d, &alloc, nullptr, &b.memory), "vkAllocateMemory");
      !ok) {
    api.vkDestroyBuffer(d, b.buffer, nullptr);
    Error e = ok.error();
    e.message = "vulkan: allocating " + std::to_string(bytes) + " bytes: " + e.message;
    return std::unexpected(e);
  }
  if (auto ok = checkVk(api.vkBindBufferMemory(d, b.buffer, b.memory, 0), "vkBindBufferMemory");
      !ok) {
    destroyVulkanBuffer(device, b);
    return std::unexpected(ok.error());
  }
  return b;
}

Expected<VulkanBuffer> createStorageBuffer(VulkanDevice &device, VkDeviceSize bytes) {
  return createVulkanBuffer(device, bytes,
                            VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                            VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
}

void destroyVulkanBuffer(VulkanDevice &device, const VulkanBuffer &b) {
  const VulkanApi &api = device.api();
  VkDevice d = static_cast<VkDevice>(device.handle());
  if (b.buffer)
    api.vkDestroyBuffer(d, b.buffer, nullptr);
  if (b.memory)
    api.vkFreeMemory(d, b.memory, nullptr);
}

void vulkanBarrier(const VulkanApi &api, VkCommandBuffer cb, VkPipelineStageFlags src,
                   VkAccessFlags srcAccess, VkPipelineStageFlags dst, VkAccessFlags dstAccess) {
  VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  b.srcAccessMask = srcAccess;
  b.dstAccessMask = dstAccess;
  api.vkCmdPipelineBarrier(cb, src, dst, 0, 1, &b, 0, nullptr, 0, nullptr);
}

void deviceWorkBarrier(const VulkanApi &api, VkCommandBuffer cb) {
  constexpr VkPipelineStageFlags kStages =
      VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  vulkanBarrier(api, cb, kStages, VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                kStages,
                VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                    VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
}

Expected<void> submitCommands(VulkanDevice &device, std::span<const VkCommandBuffer> commands,
                              VkFence fence) {
  const VulkanApi &api = device.api();
  VkSubmitInfo info{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  info.commandBufferCount = commands.size();
  info.pCommandBuffers = commands.data();
  KILN_VK_TRY(api.vkResetFences(static_cast<VkDevice>(device.handle()), 1, &fence),
              "vkResetFences");
  return checkVk(api.vkQueueSubmit(static_cast<VkQueue>(device.queueHandle()), 1, &info, fence),
                 "vkQueueSubmit");
}

Expected<void> waitForFences(VulkanDevice &device, std::span<const VkFence> fences) {
  constexpr uint64_t kWaitNanoseconds = 600ull * 1000 * 1000 * 1000;
  if (fences.empty())
    return {};
  VkResult r = device.api().vkWaitForFences(static_cast<VkDevice>(device.handle()),
                                            fences.size(), fences.data(), VK_TRUE,
                                            kWaitNanoseconds);
  if (r == VK_TIMEOUT)
    return makeError(ErrorKind::DevicePoisoned,
                     "vulkan: a submission did not finish within 600 s");
  return checkVk(r, "vkWaitForFences");
}

Expected<void> submitAndWait(VulkanDevice &device, VkCommandBuffer cb, VkFence fence) {
  if (auto ok = submitCommands(device, {&cb, 1}, fence); !ok)
    return ok;
  return waitForFences(device, {&fence, 1});
}

} // namespace kiln
