//===- VulkanProgram.h - running a GpuPlan on a Vulkan device ---*- C++ -*-===//
//
// Loading builds everything once: device-local buffers for every buffer of
// the plan, a host-visible staging buffer for inputs and outputs, one
// compute pipeline per kernel (through a VkPipelineCache), a descriptor set
// per launch binding argument i to binding i, and two recorded command
// buffers: one that copies inputs in, launches and copies outputs out, and
// one that only launches, between two timestamps. A run is then two
// memcpys and one submit.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_VULKAN_VULKANPROGRAM_H
#define KILN_RUNTIME_VULKAN_VULKANPROGRAM_H

#include "kiln/runtime/common/GpuPlan.h"
#include "kiln/runtime/vulkan/VulkanDevice.h"

#include <memory>
#include <mutex>

// Vulkan's handle types, without its header.
struct VkDescriptorSet_T;
struct VkDescriptorPool_T;
struct VkCommandBuffer_T;

namespace kiln {

class VulkanProgram {
public:
  /// `pipelineCache`: data of an earlier pipelineCacheData() (the disk
  /// cache's), so the driver skips compiling the pipelines again.
  static Expected<std::unique_ptr<VulkanProgram>>
  load(VulkanDevice &device, GpuPlan plan, std::string_view pipelineCache = {});
  /// The driver's pipeline-cache data of this program (vkGetPipelineCacheData).
  Expected<std::string> pipelineCacheData() const;
  ~VulkanProgram();
  /// Runs on one host pointer per input, then per output.
  Expected<void> run(void **buffers);
  /// Device milliseconds of the launches alone (timestamp queries), on
  /// whatever the device buffers hold; for benchmarks.
  Expected<double> timeLaunches();

  /// Where a plan buffer lives for record(): a VkBuffer and an offset in it.
  struct Binding {
    void *buffer;
    uint64_t offset;
  };
  /// Records the launches (each followed by a barrier) into a command
  /// buffer on buffers the caller owns (one binding per plan buffer), with
  /// descriptor sets allocated from `descriptorPool`, which must have room
  /// for launchCount() sets of descriptorCount() storage buffers in all.
  /// `sized`: grids, push constants and buffer bytes of one run where the
  /// program has run-time sizes (GpuPlan::launchesAt; checkLimits first);
  /// null: the program's own.
  Expected<void> record(void *commandBuffer, void *descriptorPool,
                        const std::vector<Binding> &bindings, const GpuPlan *sized = nullptr);
  /// Unsupported, naming the limit, where `plan` needs more of the device
  /// than it has (workgroups, push-constant bytes, buffer range...).
  static Expected<void> checkLimits(const GpuPlan &plan, const VulkanDeviceProperties &props);
  uint32_t launchCount() const { return plan.launches.size(); }
  uint32_t descriptorCount() const;
  const GpuPlan &gpuPlan() const { return plan; }

  struct Resources; // Vulkan handles, in VulkanProgram.cpp

private:
  VulkanProgram(VulkanDevice &device, GpuPlan plan);
  Expected<void> submit(void *commandBuffer);
  Expected<std::vector<VkDescriptorSet_T *>> allocateSets(VkDescriptorPool_T *pool);
  /// Both at `sized`: the plan, or its launches at one run's sizes.
  void writeSets(const std::vector<VkDescriptorSet_T *> &sets,
                 const std::vector<Binding> &bindings, const GpuPlan &sized);
  void recordDispatches(VkCommandBuffer_T *cb, const std::vector<VkDescriptorSet_T *> &sets,
                        const GpuPlan &sized);
  VulkanDevice &device;
  GpuPlan plan;
  std::unique_ptr<Resources> vk;
  std::mutex mutex; // one run at a time: runs share buffers
};

} // namespace kiln

#endif
