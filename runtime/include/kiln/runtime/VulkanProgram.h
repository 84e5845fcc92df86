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
#ifndef KILN_RUNTIME_VULKANPROGRAM_H
#define KILN_RUNTIME_VULKANPROGRAM_H

#include "kiln/runtime/GpuPlan.h"
#include "kiln/runtime/VulkanDevice.h"

#include <memory>
#include <mutex>

namespace kiln {

class VulkanProgram {
public:
  static Expected<std::unique_ptr<VulkanProgram>> load(VulkanDevice &device,
                                                       GpuPlan plan);
  ~VulkanProgram();
  /// Runs on one host pointer per input, then per output.
  Expected<void> run(void **buffers);
  /// Device milliseconds of the launches alone (timestamp queries), on
  /// whatever the device buffers hold; for benchmarks.
  Expected<double> timeLaunches();

  struct Resources; // Vulkan handles, in VulkanProgram.cpp

private:
  VulkanProgram(VulkanDevice &device, GpuPlan plan);
  Expected<void> submit(void *commandBuffer);
  VulkanDevice &device;
  GpuPlan plan;
  std::unique_ptr<Resources> vk;
  std::mutex mutex; // one run at a time: runs share buffers
};

} // namespace kiln

#endif
