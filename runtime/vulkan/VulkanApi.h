//===- VulkanApi.h - the Vulkan entry points kiln calls ---------*- C++ -*-===//
//
// Internal to runtime/vulkan: device-level functions resolved once per
// device with vkGetDeviceProcAddr (no link against libvulkan).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_VULKAN_VULKANAPI_H
#define KILN_RUNTIME_VULKAN_VULKANAPI_H

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <string>

namespace kiln {

#define KILN_VULKAN_DEVICE_FUNCTIONS(X)                                        \
  X(vkCreateBuffer) X(vkDestroyBuffer) X(vkGetBufferMemoryRequirements)         \
  X(vkAllocateMemory) X(vkFreeMemory) X(vkBindBufferMemory) X(vkMapMemory)      \
  X(vkCreateShaderModule) X(vkDestroyShaderModule)                              \
  X(vkCreateDescriptorSetLayout) X(vkDestroyDescriptorSetLayout)                \
  X(vkCreatePipelineLayout) X(vkDestroyPipelineLayout)                          \
  X(vkCreatePipelineCache) X(vkDestroyPipelineCache) X(vkGetPipelineCacheData)    \
  X(vkCreateComputePipelines) X(vkDestroyPipeline)                              \
  X(vkCreateDescriptorPool) X(vkDestroyDescriptorPool)                          \
  X(vkAllocateDescriptorSets) X(vkUpdateDescriptorSets)                         \
  X(vkCreateCommandPool) X(vkDestroyCommandPool) X(vkAllocateCommandBuffers)    \
  X(vkBeginCommandBuffer) X(vkEndCommandBuffer) X(vkCmdBindPipeline)            \
  X(vkCmdBindDescriptorSets) X(vkCmdDispatch) X(vkCmdPipelineBarrier)           \
  X(vkCmdCopyBuffer) X(vkCmdWriteTimestamp) X(vkCmdResetQueryPool)              \
  X(vkCreateQueryPool) X(vkDestroyQueryPool) X(vkGetQueryPoolResults)           \
  X(vkCreateFence) X(vkDestroyFence) X(vkResetFences) X(vkWaitForFences)        \
  X(vkQueueSubmit) X(vkDeviceWaitIdle) X(vkResetDescriptorPool)                \
  X(vkFreeCommandBuffers)

struct VulkanApi {
#define KILN_DECLARE(name) PFN_##name name = nullptr;
  KILN_VULKAN_DEVICE_FUNCTIONS(KILN_DECLARE)
#undef KILN_DECLARE
  VkPhysicalDeviceMemoryProperties memory{};
};

/// "what failed (VkResult N)".
inline std::string describeVkResult(const char *what, VkResult r) {
  return std::string(what) + " failed (VkResult " + std::to_string(r) + ")";
}

} // namespace kiln

#endif
