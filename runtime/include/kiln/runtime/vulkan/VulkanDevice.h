//===- VulkanDevice.h - Vulkan compute devices ------------------*- C++ -*-===//
//
// The Vulkan loader (libvulkan.so.1) is loaded with dlopen at first use:
// machines without a loader or a device report zero devices, no error.
// Mesa's lavapipe is a real Vulkan device on the CPU.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_VULKAN_VULKANDEVICE_H
#define KILN_RUNTIME_VULKAN_VULKANDEVICE_H

#include "kiln/runtime/common/Error.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln {

struct VulkanApi;

/// Element types of a cooperative matrix (VkComponentTypeKHR's values).
enum class VulkanComponentType : uint32_t {
  F16 = 0, F32 = 1, F64 = 2, I8 = 3, I16 = 4, I32 = 5, I64 = 6,
  U8 = 7, U16 = 8, U32 = 9, U64 = 10
};

/// A multiply-add a subgroup does on cooperative matrices
/// (VK_KHR_cooperative_matrix): D (m x n, result) = A (m x k, a) *
/// B (k x n, b) + C (m x n, c).
struct VulkanCooperativeMatrix {
  uint32_t m = 0, n = 0, k = 0;
  VulkanComponentType a, b, c, result;
};

struct VulkanDeviceProperties {
  std::string name;
  uint32_t vendorId = 0, deviceId = 0, driverVersion = 0, apiVersion = 0;
  uint32_t subgroupSize = 0; // read from the device: 8 on lavapipe, 32 on NVIDIA
  uint32_t maxSharedMemoryBytes = 0;
  uint32_t maxWorkgroupInvocations = 0;
  /// Streaming multiprocessors or compute units where the driver says
  /// (VK_NV_shader_sm_builtins, VK_AMD_shader_core_properties); 0 elsewhere.
  uint32_t multiprocessors = 0;
  uint32_t maxStorageBufferRange = 0;
  uint32_t maxWorkgroupCount[3] = {0, 0, 0};
  uint32_t maxWorkgroupSize[3] = {0, 0, 0};
  /// Storage buffers one kernel may bind (maxPerStageDescriptorStorageBuffers,
  /// and per descriptor set): 32 on lavapipe.
  uint32_t maxStorageBuffersPerStage = 0, maxStorageBuffersPerSet = 0;
  uint32_t maxPushConstantsBytes = 0;
  float timestampPeriodNs = 0; // device time per timestamp tick
  uint32_t computeQueueFamily = 0;
  bool float16 = false, float64 = false, int8 = false, int16 = false,
       int64 = false, storage8 = false, storage16 = false;
  bool timestampQueries = false;
  /// SignedZeroInfNanPreserve for 16/32/64-bit floats (float controls,
  /// enabled on the logical device when the driver has it).
  bool preserveNan16 = false, preserveNan32 = false, preserveNan64 = false;
  bool preserveDenorm16 = false, preserveDenorm32 = false, preserveDenorm64 = false;
  /// Atomic float adds on storage buffers (VK_EXT_shader_atomic_float,
  /// enabled where the driver has it): scatter_add's atomics.
  bool float32AtomicAdd = false, float64AtomicAdd = false;
  /// Atomic 64-bit integer ops on storage buffers (VK_KHR_shader_atomic_int64,
  /// enabled where the driver has it): i64 scatter_add's atomics.
  bool int64Atomics = false;
  /// Subgroup-scope cooperative-matrix shapes, where the driver has
  /// VK_KHR_cooperative_matrix (then enabled); empty elsewhere.
  std::vector<VulkanCooperativeMatrix> cooperativeMatrices;
  /// KILN_VULKAN_PIPELINE_STATS=1 at device creation, and the driver has
  /// VK_KHR_pipeline_executable_properties (then enabled): each kernel's
  /// statistics (registers, spills, ...) are printed to stderr as its
  /// pipeline is created.
  bool pipelineStatistics = false;
  /// The device extensions enabled on the logical device.
  std::vector<std::string> enabledExtensions;
  /// "vulkan-<vendor>-<device>-<driver>", hex ids: what SPIR-V for it
  /// depends on.
  std::string fingerprint() const;
};

class VulkanDevice {
public:
  /// How many physical devices with a compute queue the loader reports.
  static int deviceCount();
  /// Why deviceCount() is 0, in words; empty when devices exist.
  static std::string unavailableReason();
  static Expected<std::unique_ptr<VulkanDevice>> create(int index);
  ~VulkanDevice();

  const VulkanDeviceProperties &properties() const { return props; }

  /// For runtime/vulkan: the functions of this device, VkDevice, VkQueue.
  const VulkanApi &api() const { return *api_; }
  void *handle() const { return device; }
  void *queueHandle() const { return queue; }
  /// A memory type among `allowed` (bits) with all of `flags`; -1 if none.
  int memoryType(uint32_t allowed, uint32_t flags) const;

private:
  VulkanDevice(void *device, void *queue, VulkanDeviceProperties props,
               std::unique_ptr<VulkanApi> api);
  void *device; // VkDevice
  void *queue;  // VkQueue
  VulkanDeviceProperties props;
  std::unique_ptr<VulkanApi> api_;
};

} // namespace kiln

#endif
