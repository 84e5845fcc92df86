//===- VulkanDevice.cpp - Vulkan compute devices -------------------------===//
#include "kiln/runtime/vulkan/VulkanDevice.h"
#include "kiln/runtime/common/Switch.h"

#include "VulkanApi.h"
#include "vulkan/CooperativeMatrixKHR.h"

#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <string_view>
#include <vector>

namespace kiln {

namespace {
/// The loader, an instance, its functions and the physical devices with a
/// compute queue.
struct VulkanLoader {
  VkInstance instance = VK_NULL_HANDLE;
#define KILN_VULKAN_FUNCTION(name) PFN_##name name = nullptr;
#include "vulkan/VulkanInstanceFunctions.def"
#undef KILN_VULKAN_FUNCTION
  /// Null where the loader does not know VK_KHR_cooperative_matrix.
  PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR
      vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR = nullptr;
  std::vector<VkPhysicalDevice> devices;
  std::vector<uint32_t> computeFamilies;
  std::string unavailable;

  static const VulkanLoader &get() {
    static const VulkanLoader loader = load();
    return loader;
  }

private:
  static VulkanLoader load() {
    VulkanLoader l;
    void *lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char *why = dlerror();
      l.unavailable = std::string("libvulkan.so.1 not found: ") + (why ? why : "");
      return l;
    }
    auto getProc = reinterpret_cast<PFN_vkGetInstanceProcAddr>(
        dlsym(lib, "vkGetInstanceProcAddr"));
    if (!getProc) {
      l.unavailable = "libvulkan.so.1 has no vkGetInstanceProcAddr";
      return l;
    }
    auto createInstance =
        reinterpret_cast<PFN_vkCreateInstance>(getProc(VK_NULL_HANDLE, "vkCreateInstance"));
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "kiln";
    // 1.3 where the device has it: cooperative-matrix kernels are SPIR-V 1.6.
    app.apiVersion = VK_API_VERSION_1_3;
    VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    info.pApplicationInfo = &app;
    if (!createInstance || createInstance(&info, nullptr, &l.instance) != VK_SUCCESS) {
      l.unavailable = "vkCreateInstance failed (no Vulkan driver?)";
      l.instance = VK_NULL_HANDLE;
      return l;
    }
#define KILN_VULKAN_FUNCTION(name)                                             \
  l.name = reinterpret_cast<PFN_##name>(getProc(l.instance, #name));           \
  if (!l.name) {                                                               \
    l.unavailable = "the Vulkan loader has no " #name;                         \
    return l;                                                                  \
  }
#include "vulkan/VulkanInstanceFunctions.def"
#undef KILN_VULKAN_FUNCTION
    l.vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR =
        reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR>(
            getProc(l.instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"));
    uint32_t count = 0;
    l.vkEnumeratePhysicalDevices(l.instance, &count, nullptr);
    std::vector<VkPhysicalDevice> all(count);
    l.vkEnumeratePhysicalDevices(l.instance, &count, all.data());
    for (VkPhysicalDevice d : all) {
      uint32_t n = 0;
      l.vkGetPhysicalDeviceQueueFamilyProperties(d, &n, nullptr);
      std::vector<VkQueueFamilyProperties> props(n);
      l.vkGetPhysicalDeviceQueueFamilyProperties(d, &n, props.data());
      for (uint32_t f = 0; f < n; ++f)
        if (props[f].queueFlags & VK_QUEUE_COMPUTE_BIT) {
          l.devices.push_back(d);
          l.computeFamilies.push_back(f);
          break;
        }
    }
    if (l.devices.empty())
      l.unavailable = "the Vulkan loader finds no device with a compute queue";
    return l;
  }
};
} // namespace

/// The driver's subgroup-scope, non-saturating cooperative-matrix shapes.
static std::vector<VulkanCooperativeMatrix> cooperativeMatricesOf(const VulkanLoader &l,
                                                                  VkPhysicalDevice physical) {
  uint32_t count = 0;
  if (l.vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR(physical, &count, nullptr) !=
      VK_SUCCESS)
    return {};
  std::vector<VkCooperativeMatrixPropertiesKHR> all(
      count, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR});
  if (l.vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR(physical, &count, all.data()) !=
      VK_SUCCESS)
    return {};
  std::vector<VulkanCooperativeMatrix> shapes;
  all.resize(count);
  for (const VkCooperativeMatrixPropertiesKHR &c : all)
    if (c.scope == VK_SCOPE_SUBGROUP_KHR && !c.saturatingAccumulation &&
        c.AType <= VK_COMPONENT_TYPE_UINT64_KHR && c.BType <= VK_COMPONENT_TYPE_UINT64_KHR &&
        c.CType <= VK_COMPONENT_TYPE_UINT64_KHR && c.ResultType <= VK_COMPONENT_TYPE_UINT64_KHR)
      shapes.push_back({c.MSize, c.NSize, c.KSize, VulkanComponentType(c.AType),
                        VulkanComponentType(c.BType), VulkanComponentType(c.CType),
                        VulkanComponentType(c.ResultType)});
  return shapes;
}

std::string VulkanDeviceProperties::fingerprint() const {
  char text[64];
  std::snprintf(text, sizeof text, "vulkan-%04x-%04x-%08x", vendorId, deviceId,
                driverVersion);
  return text;
}

int VulkanDevice::deviceCount() {
  return static_cast<int>(VulkanLoader::get().devices.size());
}

std::string VulkanDevice::unavailableReason() {
  return VulkanLoader::get().unavailable;
}

Expected<std::unique_ptr<VulkanDevice>> VulkanDevice::create(int index) {
  const VulkanLoader &l = VulkanLoader::get();
  if (index < 0 || index >= static_cast<int>(l.devices.size()))
    return makeError(ErrorKind::InvalidArgument,
                     "device vulkan:" + std::to_string(index) + " does not exist (" +
                         (l.devices.empty() ? l.unavailable
                                            : std::to_string(l.devices.size()) +
                                                  " Vulkan device(s)") +
                         ")");
  VkPhysicalDevice physical = l.devices[index];
  VulkanDeviceProperties p;
  p.computeQueueFamily = l.computeFamilies[index];

  uint32_t extensionCount = 0;
  l.vkEnumerateDeviceExtensionProperties(physical, nullptr, &extensionCount, nullptr);
  std::vector<VkExtensionProperties> extensions(extensionCount);
  l.vkEnumerateDeviceExtensionProperties(physical, nullptr, &extensionCount, extensions.data());
  auto has = [&](std::string_view name) {
    for (const VkExtensionProperties &e : extensions)
      if (name == e.extensionName)
        return true;
    return false;
  };
  // kiln's instance asks for Vulkan 1.1, so what SPIR-V for this device may
  // declare beyond 1.1 (8-bit storage, Int8/Float16, float controls) must
  // be enabled as extensions, and their features queried through them.
  std::vector<const char *> enabled;
  for (const char *name : {VK_KHR_SHADER_FLOAT_CONTROLS_EXTENSION_NAME,
                           VK_KHR_8BIT_STORAGE_EXTENSION_NAME,
                           VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME})
    if (has(name))
      enabled.push_back(name);
  bool floatControls = has(VK_KHR_SHADER_FLOAT_CONTROLS_EXTENSION_NAME);

  VkPhysicalDeviceSubgroupProperties subgroup{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceFloatControlsProperties floatProps{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES};
  VkPhysicalDeviceShaderSMBuiltinsPropertiesNV nvCores{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV};
  VkPhysicalDeviceShaderCorePropertiesAMD amdCores{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_AMD};
  VkPhysicalDeviceShaderCoreProperties2AMD amdActiveCores{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_2_AMD};
  VkPhysicalDeviceProperties2 props2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  auto chainProperties = [&](auto &properties) {
    properties.pNext = props2.pNext;
    props2.pNext = &properties;
  };
  chainProperties(subgroup);
  if (floatControls)
    chainProperties(floatProps);
  bool nvCoreCount = has(VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME);
  bool amdCoreCount = has(VK_AMD_SHADER_CORE_PROPERTIES_EXTENSION_NAME);
  if (nvCoreCount)
    chainProperties(nvCores);
  // AMD's core properties count disabled compute units too; the second
  // ones count the active.
  bool amdActiveCount = has(VK_AMD_SHADER_CORE_PROPERTIES_2_EXTENSION_NAME);
  if (amdActiveCount)
    chainProperties(amdActiveCores);
  else if (amdCoreCount)
    chainProperties(amdCores);
  l.vkGetPhysicalDeviceProperties2(physical, &props2);
  if (nvCoreCount)
    p.multiprocessors = nvCores.shaderSMCount;
  else if (amdActiveCount)
    p.multiprocessors = amdActiveCores.activeComputeUnitCount;
  else if (amdCoreCount)
    p.multiprocessors = amdCores.shaderEngineCount * amdCores.shaderArraysPerEngineCount *
                        amdCores.computeUnitsPerShaderArray;
  const VkPhysicalDeviceProperties &base = props2.properties;
  p.name = base.deviceName;
  p.vendorId = base.vendorID;
  p.deviceId = base.deviceID;
  p.driverVersion = base.driverVersion;
  p.apiVersion = base.apiVersion;
  p.subgroupSize = subgroup.subgroupSize;
  p.maxSharedMemoryBytes = base.limits.maxComputeSharedMemorySize;
  p.maxWorkgroupInvocations = base.limits.maxComputeWorkGroupInvocations;
  p.maxStorageBufferRange = base.limits.maxStorageBufferRange;
  p.maxStorageBuffersPerStage = base.limits.maxPerStageDescriptorStorageBuffers;
  p.maxStorageBuffersPerSet = base.limits.maxDescriptorSetStorageBuffers;
  p.maxPushConstantsBytes = base.limits.maxPushConstantsSize;
  for (int d = 0; d < 3; ++d)
    p.maxWorkgroupSize[d] = base.limits.maxComputeWorkGroupSize[d];
  p.timestampQueries = base.limits.timestampComputeAndGraphics;
  p.timestampPeriodNs = base.limits.timestampPeriod;
  p.preserveNan16 = floatProps.shaderSignedZeroInfNanPreserveFloat16;
  p.preserveNan32 = floatProps.shaderSignedZeroInfNanPreserveFloat32;
  p.preserveNan64 = floatProps.shaderSignedZeroInfNanPreserveFloat64;
  p.preserveDenorm16 = floatProps.shaderDenormPreserveFloat16;
  p.preserveDenorm32 = floatProps.shaderDenormPreserveFloat32;
  p.preserveDenorm64 = floatProps.shaderDenormPreserveFloat64;
  for (int d = 0; d < 3; ++d)
    p.maxWorkgroupCount[d] = base.limits.maxComputeWorkGroupCount[d];

  VkPhysicalDeviceShaderFloat16Int8Features f16i8{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  VkPhysicalDevice8BitStorageFeatures storage8{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES};
  VkPhysicalDevice16BitStorageFeatures storage16{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  VkPhysicalDeviceCooperativeMatrixFeaturesKHR cooperative{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR};
  bool cooperativeExtension = has(VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME) &&
                              l.vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR;
  VkPhysicalDeviceShaderAtomicFloatFeaturesEXT atomicFloat{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT};
  bool atomicFloatExtension = has(VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME);
  VkPhysicalDeviceShaderAtomicInt64Features atomicInt64{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_INT64_FEATURES};
  bool atomicInt64Extension = has(VK_KHR_SHADER_ATOMIC_INT64_EXTENSION_NAME);
  // KILN_VULKAN_PIPELINE_STATS=1: the driver's statistics of each kernel
  // (registers, shared memory, ...) are printed as its pipeline is created.
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR executableInfo{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  static const bool statsWanted = switchSetting("KILN_VULKAN_PIPELINE_STATS", false);
  bool executableExtension =
      statsWanted && has(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);

  // Features are queried through a chain of the structs whose extensions
  // the driver has (16-bit storage is core in 1.1), then the chain is
  // built again of those that get enabled: vkCreateDevice enables what it
  // is handed.
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  auto chain = [&](std::initializer_list<std::pair<bool, VkBaseOutStructure *>> structs) {
    features.pNext = nullptr;
    for (auto [in, s] : structs)
      if (in) {
        s->pNext = static_cast<VkBaseOutStructure *>(features.pNext);
        features.pNext = s;
      }
  };
  auto link = [](auto &s) { return reinterpret_cast<VkBaseOutStructure *>(&s); };
  bool has8 = has(VK_KHR_8BIT_STORAGE_EXTENSION_NAME);
  bool has16i8 = has(VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
  chain({{true, link(storage16)},
         {has8, link(storage8)},
         {has16i8, link(f16i8)},
         {cooperativeExtension, link(cooperative)},
         {atomicFloatExtension, link(atomicFloat)},
         {atomicInt64Extension, link(atomicInt64)},
         {executableExtension, link(executableInfo)}});
  l.vkGetPhysicalDeviceFeatures2(physical, &features);
  p.float32AtomicAdd = atomicFloat.shaderBufferFloat32AtomicAdd;
  p.float64AtomicAdd = atomicFloat.shaderBufferFloat64AtomicAdd;
  if (p.float32AtomicAdd || p.float64AtomicAdd)
    enabled.push_back(VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME);
  p.int64Atomics = atomicInt64.shaderBufferInt64Atomics;
  if (p.int64Atomics)
    enabled.push_back(VK_KHR_SHADER_ATOMIC_INT64_EXTENSION_NAME);
  if (cooperative.cooperativeMatrix) {
    enabled.push_back(VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
    p.cooperativeMatrices = cooperativeMatricesOf(l, physical);
  }
  if (executableInfo.pipelineExecutableInfo) {
    enabled.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
    p.pipelineStatistics = true;
  }
  chain({{true, link(storage16)},
         {has8, link(storage8)},
         {has16i8, link(f16i8)},
         {cooperative.cooperativeMatrix != VK_FALSE, link(cooperative)},
         {p.float32AtomicAdd || p.float64AtomicAdd, link(atomicFloat)},
         {p.int64Atomics, link(atomicInt64)},
         {p.pipelineStatistics, link(executableInfo)}});
  p.float16 = f16i8.shaderFloat16;
  p.int8 = f16i8.shaderInt8;
  p.float64 = features.features.shaderFloat64;
  p.int16 = features.features.shaderInt16;
  p.int64 = features.features.shaderInt64;
  p.storage8 = storage8.storageBuffer8BitAccess;
  p.storage16 = storage16.storageBuffer16BitAccess;

  float priority = 1.0f;
  VkDeviceQueueCreateInfo queueInfo{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queueInfo.queueFamilyIndex = p.computeQueueFamily;
  queueInfo.queueCount = 1;
  queueInfo.pQueuePriorities = &priority;
  VkDeviceCreateInfo deviceInfo{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  deviceInfo.queueCreateInfoCount = 1;
  deviceInfo.pQueueCreateInfos = &queueInfo;
  deviceInfo.pNext = &features; // enable what the device has
  deviceInfo.enabledExtensionCount = enabled.size();
  deviceInfo.ppEnabledExtensionNames = enabled.data();
  p.enabledExtensions.assign(enabled.begin(), enabled.end());
  VkDevice device;
  VkResult r = l.vkCreateDevice(physical, &deviceInfo, nullptr, &device);
  if (r != VK_SUCCESS)
    return makeError(ErrorKind::Launch, "vulkan:" + std::to_string(index) +
                                            ": vkCreateDevice failed (VkResult " +
                                            std::to_string(r) + ")");
  VkQueue queue;
  l.vkGetDeviceQueue(device, p.computeQueueFamily, 0, &queue);
  auto api = std::make_unique<VulkanApi>();
#define KILN_VULKAN_FUNCTION(name)                                             \
  api->name = reinterpret_cast<PFN_##name>(l.vkGetDeviceProcAddr(device, #name)); \
  if (!api->name) {                                                            \
    l.vkDestroyDevice(device, nullptr);                                        \
    return makeError(ErrorKind::Unsupported, "vulkan:" + std::to_string(index) + \
                                                 ": the driver has no " #name); \
  }
#include "vulkan/VulkanDeviceFunctions.def"
#undef KILN_VULKAN_FUNCTION
  if (p.pipelineStatistics) {
    api->vkGetPipelineExecutablePropertiesKHR =
        reinterpret_cast<PFN_vkGetPipelineExecutablePropertiesKHR>(
            l.vkGetDeviceProcAddr(device, "vkGetPipelineExecutablePropertiesKHR"));
    api->vkGetPipelineExecutableStatisticsKHR =
        reinterpret_cast<PFN_vkGetPipelineExecutableStatisticsKHR>(
            l.vkGetDeviceProcAddr(device, "vkGetPipelineExecutableStatisticsKHR"));
    p.pipelineStatistics =
        api->vkGetPipelineExecutablePropertiesKHR && api->vkGetPipelineExecutableStatisticsKHR;
  }
  l.vkGetPhysicalDeviceMemoryProperties(physical, &api->memory);
  return std::unique_ptr<VulkanDevice>(
      new VulkanDevice(device, queue, std::move(p), std::move(api)));
}

VulkanDevice::VulkanDevice(void *device, void *queue, VulkanDeviceProperties props,
                           std::unique_ptr<VulkanApi> api)
    : device(device), queue(queue), props(std::move(props)), api_(std::move(api)) {}

int VulkanDevice::memoryType(uint32_t allowed, uint32_t flags) const {
  for (uint32_t i = 0; i < api_->memory.memoryTypeCount; ++i)
    if ((allowed & (1u << i)) &&
        (api_->memory.memoryTypes[i].propertyFlags & flags) == flags)
      return static_cast<int>(i);
  return -1;
}

VulkanDevice::~VulkanDevice() {
  VulkanLoader::get().vkDestroyDevice(static_cast<VkDevice>(device), nullptr);
}

} // namespace kiln
