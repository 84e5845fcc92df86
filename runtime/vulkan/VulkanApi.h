//===- VulkanApi.h - the Vulkan entry points kiln calls ---------*- C++ -*-===//
//
// Internal to runtime/vulkan: device-level functions resolved once per
// device with vkGetDeviceProcAddr (no link against libvulkan); the list is
// third_party/vulkan/VulkanDeviceFunctions.def.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_VULKAN_VULKANAPI_H
#define KILN_RUNTIME_VULKAN_VULKANAPI_H

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <string>

namespace kiln {

struct VulkanApi {
#define KILN_VULKAN_FUNCTION(name) PFN_##name name = nullptr;
#include "vulkan/VulkanDeviceFunctions.def"
#undef KILN_VULKAN_FUNCTION
  /// Where VulkanDeviceProperties::pipelineStatistics: the driver's
  /// statistics of a pipeline (VK_KHR_pipeline_executable_properties).
  PFN_vkGetPipelineExecutablePropertiesKHR vkGetPipelineExecutablePropertiesKHR = nullptr;
  PFN_vkGetPipelineExecutableStatisticsKHR vkGetPipelineExecutableStatisticsKHR = nullptr;
  VkPhysicalDeviceMemoryProperties memory{};
};

/// "what failed (VkResult N)".
inline std::string describeVkResult(const char *what, VkResult r) {
  return std::string(what) + " failed (VkResult " + std::to_string(r) + ")";
}

} // namespace kiln

#endif
