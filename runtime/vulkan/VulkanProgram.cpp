//===- VulkanProgram.cpp - running a GpuPlan on a Vulkan device ----------===//
#include "kiln/runtime/vulkan/VulkanProgram.h"
#include "kiln/runtime/common/CopyBytes.h"

#include "VulkanCommon.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>

namespace kiln {

/// Storage buffers a launch binds: its buffer arguments, which come before
/// its scalars (kiln-gpu-kernel-sizes), so buffer i is binding i.
static uint32_t bufferArguments(const KernelLaunch &launch) {
  return std::ranges::count_if(launch.arguments, [](const KernelArgument &a) {
    return std::holds_alternative<BufferView>(a);
  });
}

struct VulkanProgram::Resources {
  std::vector<VulkanBuffer> buffers;
  VulkanBuffer staging;
  std::byte *stagingData = nullptr;
  std::vector<VkDeviceSize> stagingOffsets; // per input, then per output
  std::vector<VkShaderModule> modules;
  VkPipelineCache pipelineCache = VK_NULL_HANDLE;
  VkDescriptorPool descriptorPool = VK_NULL_HANDLE;
  std::vector<VkDescriptorSetLayout> setLayouts;
  std::vector<VkPipelineLayout> pipelineLayouts;
  std::vector<VkPipeline> pipelines;
  std::vector<VkDescriptorSet> sets; // per launch
  std::vector<size_t> pipelineOf;    // per launch
  VkCommandPool commandPool = VK_NULL_HANDLE;
  VkCommandBuffer runCommands = VK_NULL_HANDLE, timedCommands = VK_NULL_HANDLE;
  VkQueryPool timestamps = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
};

VulkanProgram::VulkanProgram(VulkanDevice &device, GpuPlan plan)
    : device(device), plan(std::move(plan)), vk(std::make_unique<Resources>()) {}

/// Vulkan's two-call enumeration: `query(&count, nullptr)`, then
/// `query(&count, data)` into elements of sType `type`; empty on failure.
template <typename T, typename Query>
static std::vector<T> enumerate(VkStructureType type, Query query) {
  uint32_t count = 0;
  if (query(&count, nullptr) != VK_SUCCESS)
    return {};
  std::vector<T> out(count, T{type});
  if (query(&count, out.data()) != VK_SUCCESS)
    return {};
  out.resize(count);
  return out;
}

/// The driver's statistics of `pipeline` (VK_KHR_pipeline_executable_properties),
/// one line per executable on stderr: "kiln: vulkan kernel K (executable):
/// Register Count = 128, ...".
static void printStatistics(const VulkanApi &api, VkDevice device, VkPipeline pipeline,
                            const std::string &kernel) {
  VkPipelineInfoKHR info{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR};
  info.pipeline = pipeline;
  auto executables = enumerate<VkPipelineExecutablePropertiesKHR>(
      VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR,
      [&](uint32_t *n, VkPipelineExecutablePropertiesKHR *out) {
        return api.vkGetPipelineExecutablePropertiesKHR(device, &info, n, out);
      });
  for (uint32_t e = 0; e < executables.size(); ++e) {
    VkPipelineExecutableInfoKHR which{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
    which.pipeline = pipeline;
    which.executableIndex = e;
    auto stats = enumerate<VkPipelineExecutableStatisticKHR>(
        VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR,
        [&](uint32_t *n, VkPipelineExecutableStatisticKHR *out) {
          return api.vkGetPipelineExecutableStatisticsKHR(device, &which, n, out);
        });
    std::string line = "kiln: vulkan kernel " + kernel + " (" + executables[e].name + "):";
    for (const VkPipelineExecutableStatisticKHR &st : stats) {
      line += std::string(&st == stats.data() ? " " : ", ") + st.name + " = ";
      switch (st.format) {
      case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR:
        line += st.value.b32 ? "true" : "false";
        break;
      case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR:
        line += std::to_string(st.value.i64);
        break;
      case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
        line += std::to_string(st.value.u64);
        break;
      default:
        line += std::to_string(st.value.f64);
      }
    }
    std::fprintf(stderr, "%s\n", line.c_str());
  }
}

/// Every device limit a plan depends on, checked before anything reaches the
/// driver (which may crash on a pipeline beyond them: lavapipe does with
/// more storage buffers than it has).
Expected<void> VulkanProgram::checkLimits(const GpuPlan &plan,
                                          const VulkanDeviceProperties &props) {
  auto beyond = [](const std::string &what, uint64_t needed, const char *limit,
                   uint64_t allowed) {
    return makeError(ErrorKind::Unsupported,
                     "vulkan: " + what + " is " + std::to_string(needed) +
                         ", beyond the device's " + limit + " (" +
                         std::to_string(allowed) + ")");
  };
  for (const KernelLaunch &launch : plan.launches) {
    std::string kernel = "kernel " + launch.kernel;
    if (std::ranges::any_of(launch.arguments, [](const KernelArgument &a) {
          return std::holds_alternative<TensorMapArgument>(a);
        }))
      return makeError(ErrorKind::Unsupported,
                       "vulkan: " + kernel + " takes a CUDA tensor map (a plan for CUDA)");
    uint64_t invocations = 1;
    for (int d = 0; d < 3; ++d) {
      std::string dim = " in dim " + std::to_string(d);
      if (launch.shape.grid[d] > props.maxWorkgroupCount[d])
        return beyond(kernel + " workgroups" + dim, launch.shape.grid[d],
                      "maxComputeWorkGroupCount", props.maxWorkgroupCount[d]);
      if (launch.shape.block[d] > props.maxWorkgroupSize[d])
        return beyond(kernel + " workgroup size" + dim, launch.shape.block[d],
                      "maxComputeWorkGroupSize", props.maxWorkgroupSize[d]);
      invocations *= launch.shape.block[d];
    }
    if (invocations > props.maxWorkgroupInvocations)
      return beyond(kernel + " invocations per workgroup", invocations,
                    "maxComputeWorkGroupInvocations", props.maxWorkgroupInvocations);
    if (launch.shape.sharedMemoryBytes > props.maxSharedMemoryBytes)
      return beyond(kernel + " shared memory bytes", launch.shape.sharedMemoryBytes,
                    "maxComputeSharedMemorySize", props.maxSharedMemoryBytes);
    uint32_t limit = std::min(props.maxStorageBuffersPerStage,
                              props.maxStorageBuffersPerSet);
    if (bufferArguments(launch) > limit)
      return beyond(kernel + " storage buffers", bufferArguments(launch),
                    "maxPerStageDescriptorStorageBuffers", limit);
    if (launch.pushConstants().size() > props.maxPushConstantsBytes)
      return beyond(kernel + " push-constant bytes (its run-time sizes)",
                    launch.pushConstants().size(), "maxPushConstantsSize",
                    props.maxPushConstantsBytes);
  }
  for (size_t bytes : plan.bufferBytes)
    if (bytes > props.maxStorageBufferRange)
      return beyond("a buffer's byte size", bytes, "maxStorageBufferRange",
                    props.maxStorageBufferRange);
  return {};
}

Expected<std::unique_ptr<VulkanProgram>>
VulkanProgram::load(VulkanDevice &device, GpuPlan plan, std::string_view pipelineCache) {
  const VulkanDeviceProperties &props = device.properties();
  if (auto ok = checkLimits(plan, props); !ok)
    return std::unexpected(ok.error());

  std::unique_ptr<VulkanProgram> program(new VulkanProgram(device, std::move(plan)));
  const GpuPlan &p = program->plan;
  Resources &vk = *program->vk;
  const VulkanApi &api = device.api();
  VkDevice d = static_cast<VkDevice>(device.handle());

  for (size_t bytes : p.bufferBytes) {
    auto b = createStorageBuffer(device, bytes);
    if (!b)
      return std::unexpected(b.error());
    vk.buffers.push_back(*b);
  }
  VkDeviceSize stagingBytes = 0;
  for (size_t i = 0; i < p.inputCount + p.outputCount; ++i) {
    vk.stagingOffsets.push_back(stagingBytes);
    stagingBytes += (p.bufferBytes[i] + 15) / 16 * 16;
  }
  auto staging = createVulkanBuffer(device, stagingBytes,
                              VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                  VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                              VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                  VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
  if (!staging)
    return std::unexpected(staging.error());
  vk.staging = *staging;
  void *mapped = nullptr;
  KILN_VK_TRY(api.vkMapMemory(d, vk.staging.memory, 0, VK_WHOLE_SIZE, 0, &mapped),
              "vkMapMemory");
  vk.stagingData = static_cast<std::byte *>(mapped);

  for (const std::string &words : p.modules) {
    VkShaderModuleCreateInfo info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    info.codeSize = words.size();
    info.pCode = reinterpret_cast<const uint32_t *>(words.data());
    VkShaderModule module;
    KILN_VK_TRY(api.vkCreateShaderModule(d, &info, nullptr, &module),
                "vkCreateShaderModule");
    vk.modules.push_back(module);
  }
  // The driver checks the data's header (vendor, device, cache UUID) and
  // starts empty on a mismatch, so stale data costs nothing but time.
  VkPipelineCacheCreateInfo cacheInfo{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  cacheInfo.initialDataSize = pipelineCache.size();
  cacheInfo.pInitialData = pipelineCache.data();
  KILN_VK_TRY(api.vkCreatePipelineCache(d, &cacheInfo, nullptr, &vk.pipelineCache),
              "vkCreatePipelineCache");

  // One pipeline per (module, kernel); launches of it share it.
  std::map<std::pair<int, std::string>, size_t> pipelineIndex;
  uint32_t descriptors = 0;
  for (const KernelLaunch &launch : p.launches) {
    descriptors += bufferArguments(launch);
    auto [it, added] = pipelineIndex.try_emplace({launch.module, launch.kernel},
                                                 vk.pipelines.size());
    vk.pipelineOf.push_back(it->second);
    if (!added)
      continue;
    std::vector<VkDescriptorSetLayoutBinding> bindings(bufferArguments(launch));
    for (uint32_t i = 0; i < bindings.size(); ++i)
      bindings[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1,
                     VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
    VkDescriptorSetLayoutCreateInfo setInfo{
        VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    setInfo.bindingCount = bindings.size();
    setInfo.pBindings = bindings.data();
    VkDescriptorSetLayout setLayout;
    KILN_VK_TRY(api.vkCreateDescriptorSetLayout(d, &setInfo, nullptr, &setLayout),
                "vkCreateDescriptorSetLayout");
    vk.setLayouts.push_back(setLayout);
    VkPipelineLayoutCreateInfo layoutInfo{
        VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    layoutInfo.setLayoutCount = 1;
    layoutInfo.pSetLayouts = &setLayout;
    VkPushConstantRange pushRange{VK_SHADER_STAGE_COMPUTE_BIT, 0,
                                  static_cast<uint32_t>(launch.pushConstants().size())};
    if (pushRange.size > 0) {
      layoutInfo.pushConstantRangeCount = 1;
      layoutInfo.pPushConstantRanges = &pushRange;
    }
    VkPipelineLayout layout;
    KILN_VK_TRY(api.vkCreatePipelineLayout(d, &layoutInfo, nullptr, &layout),
                "vkCreatePipelineLayout");
    vk.pipelineLayouts.push_back(layout);
    VkComputePipelineCreateInfo info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    info.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
    info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    info.stage.module = vk.modules.at(launch.module);
    info.stage.pName = launch.kernel.c_str();
    info.layout = layout;
    if (props.pipelineStatistics)
      info.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
    VkPipeline pipeline;
    KILN_VK_TRY(api.vkCreateComputePipelines(d, vk.pipelineCache, 1, &info, nullptr,
                                             &pipeline),
                "vkCreateComputePipelines");
    vk.pipelines.push_back(pipeline);
    if (props.pipelineStatistics)
      printStatistics(api, d, pipeline, launch.kernel);
  }

  if (!p.launches.empty()) {
    VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                              std::max(descriptors, 1u)};
    VkDescriptorPoolCreateInfo poolInfo{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    poolInfo.maxSets = p.launches.size();
    poolInfo.poolSizeCount = 1;
    poolInfo.pPoolSizes = &size;
    KILN_VK_TRY(api.vkCreateDescriptorPool(d, &poolInfo, nullptr, &vk.descriptorPool),
                "vkCreateDescriptorPool");
  }
  auto sets = program->allocateSets(vk.descriptorPool);
  if (!sets)
    return std::unexpected(sets.error());
  vk.sets = std::move(*sets);
  std::vector<Binding> own;
  for (const VulkanBuffer &b : vk.buffers)
    own.push_back({b.buffer, 0});
  program->writeSets(vk.sets, own, p);

  VkCommandPoolCreateInfo poolInfo{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  poolInfo.queueFamilyIndex = props.computeQueueFamily;
  KILN_VK_TRY(api.vkCreateCommandPool(d, &poolInfo, nullptr, &vk.commandPool),
              "vkCreateCommandPool");
  VkCommandBufferAllocateInfo cbInfo{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  cbInfo.commandPool = vk.commandPool;
  cbInfo.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cbInfo.commandBufferCount = 2;
  VkCommandBuffer cbs[2];
  KILN_VK_TRY(api.vkAllocateCommandBuffers(d, &cbInfo, cbs), "vkAllocateCommandBuffers");
  vk.runCommands = cbs[0];
  vk.timedCommands = cbs[1];
  VkQueryPoolCreateInfo queryInfo{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  queryInfo.queryType = VK_QUERY_TYPE_TIMESTAMP;
  queryInfo.queryCount = 2;
  if (props.timestampQueries)
    KILN_VK_TRY(api.vkCreateQueryPool(d, &queryInfo, nullptr, &vk.timestamps),
                "vkCreateQueryPool");
  VkFenceCreateInfo fenceInfo{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  KILN_VK_TRY(api.vkCreateFence(d, &fenceInfo, nullptr, &vk.fence), "vkCreateFence");

  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  KILN_VK_TRY(api.vkBeginCommandBuffer(vk.runCommands, &begin), "vkBeginCommandBuffer");
  for (size_t i = 0; i < p.inputCount; ++i) {
    VkBufferCopy copy{vk.stagingOffsets[i], 0, std::max<VkDeviceSize>(p.bufferBytes[i], 1)};
    if (p.bufferBytes[i])
      api.vkCmdCopyBuffer(vk.runCommands, vk.staging.buffer, vk.buffers[i].buffer, 1, &copy);
  }
  vulkanBarrier(api, vk.runCommands, VK_PIPELINE_STAGE_TRANSFER_BIT,
          VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
          VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
  program->recordDispatches(vk.runCommands, vk.sets, p);
  vulkanBarrier(api, vk.runCommands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
          VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
          VK_ACCESS_TRANSFER_READ_BIT);
  for (size_t o = 0; o < p.outputCount; ++o) {
    size_t b = p.inputCount + o;
    VkBufferCopy copy{0, vk.stagingOffsets[b], p.bufferBytes[b]};
    if (p.bufferBytes[b])
      api.vkCmdCopyBuffer(vk.runCommands, vk.buffers[b].buffer, vk.staging.buffer, 1, &copy);
  }
  vulkanBarrier(api, vk.runCommands, VK_PIPELINE_STAGE_TRANSFER_BIT,
          VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
          VK_ACCESS_HOST_READ_BIT);
  KILN_VK_TRY(api.vkEndCommandBuffer(vk.runCommands), "vkEndCommandBuffer");

  KILN_VK_TRY(api.vkBeginCommandBuffer(vk.timedCommands, &begin), "vkBeginCommandBuffer");
  if (vk.timestamps) {
    api.vkCmdResetQueryPool(vk.timedCommands, vk.timestamps, 0, 2);
    api.vkCmdWriteTimestamp(vk.timedCommands, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
                            vk.timestamps, 0);
  }
  program->recordDispatches(vk.timedCommands, vk.sets, p);
  if (vk.timestamps)
    api.vkCmdWriteTimestamp(vk.timedCommands, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
                            vk.timestamps, 1);
  KILN_VK_TRY(api.vkEndCommandBuffer(vk.timedCommands), "vkEndCommandBuffer");
  return program;
}

Expected<std::vector<VkDescriptorSet>> VulkanProgram::allocateSets(VkDescriptorPool pool) {
  const VulkanApi &api = device.api();
  VkDevice d = static_cast<VkDevice>(device.handle());
  std::vector<VkDescriptorSet> sets;
  for (size_t l = 0; l < plan.launches.size(); ++l) {
    VkDescriptorSetAllocateInfo alloc{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    alloc.descriptorPool = pool;
    alloc.descriptorSetCount = 1;
    alloc.pSetLayouts = &vk->setLayouts[vk->pipelineOf[l]];
    VkDescriptorSet set;
    KILN_VK_TRY(api.vkAllocateDescriptorSets(d, &alloc, &set), "vkAllocateDescriptorSets");
    sets.push_back(set);
  }
  return sets;
}

void VulkanProgram::writeSets(const std::vector<VkDescriptorSet> &sets,
                              const std::vector<Binding> &bindings, const GpuPlan &sized) {
  for (size_t l = 0; l < sized.launches.size(); ++l) {
    const auto &args = sized.launches[l].arguments;
    uint32_t buffers = bufferArguments(sized.launches[l]);
    std::vector<VkDescriptorBufferInfo> infos(buffers);
    std::vector<VkWriteDescriptorSet> writes(buffers);
    for (uint32_t i = 0; i < buffers; ++i) {
      // The buffer from its start: a view's offset and strides are in the
      // kernel.
      int b = std::get<BufferView>(args[i]).buffer;
      VkDeviceSize range = std::max<VkDeviceSize>(16, (sized.bufferBytes[b] + 15) / 16 * 16);
      infos[i] = {static_cast<VkBuffer>(bindings[b].buffer), bindings[b].offset, range};
      writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
      writes[i].dstSet = sets[l];
      writes[i].dstBinding = i;
      writes[i].descriptorCount = 1;
      writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      writes[i].pBufferInfo = &infos[i];
    }
    device.api().vkUpdateDescriptorSets(static_cast<VkDevice>(device.handle()), writes.size(),
                                        writes.data(), 0, nullptr);
  }
}

void VulkanProgram::recordDispatches(VkCommandBuffer cb, const std::vector<VkDescriptorSet> &sets,
                                     const GpuPlan &sized) {
  const VulkanApi &api = device.api();
  for (size_t l = 0; l < sized.launches.size(); ++l) {
    size_t pipe = vk->pipelineOf[l];
    api.vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, vk->pipelines[pipe]);
    api.vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, vk->pipelineLayouts[pipe],
                                0, 1, &sets[l], 0, nullptr);
    std::vector<std::byte> pushed = sized.launches[l].pushConstants();
    if (!pushed.empty())
      api.vkCmdPushConstants(cb, vk->pipelineLayouts[pipe], VK_SHADER_STAGE_COMPUTE_BIT, 0,
                             pushed.size(), pushed.data());
    const auto &grid = sized.launches[l].shape.grid;
    api.vkCmdDispatch(cb, grid[0], grid[1], grid[2]);
    deviceWorkBarrier(api, cb);
  }
}

uint32_t VulkanProgram::descriptorCount() const {
  uint32_t n = 0;
  for (const KernelLaunch &launch : plan.launches)
    n += bufferArguments(launch);
  return n;
}

Expected<void> VulkanProgram::record(void *commandBuffer, void *descriptorPool,
                                     const std::vector<Binding> &bindings, const GpuPlan *sized) {
  const GpuPlan &at = sized ? *sized : plan;
  if (bindings.size() != plan.bufferBytes.size())
    return makeError(ErrorKind::InvalidArgument,
                     "vulkan: the program has " + std::to_string(plan.bufferBytes.size()) +
                         " buffers, " + std::to_string(bindings.size()) + " given");
  if (at.launches.size() != plan.launches.size() ||
      at.bufferBytes.size() != plan.bufferBytes.size())
    return makeError(ErrorKind::InvalidArgument,
                     "vulkan: sizes given of another program (" +
                         std::to_string(at.launches.size()) + " launches, the program has " +
                         std::to_string(plan.launches.size()) + ")");
  auto sets = allocateSets(static_cast<VkDescriptorPool>(descriptorPool));
  if (!sets)
    return std::unexpected(sets.error());
  writeSets(*sets, bindings, at);
  recordDispatches(static_cast<VkCommandBuffer>(commandBuffer), *sets, at);
  return {};
}

Expected<void> VulkanProgram::submit(void *commandBuffer) {
  return submitAndWait(device, static_cast<VkCommandBuffer>(commandBuffer), vk->fence);
}

Expected<std::string> VulkanProgram::pipelineCacheData() const {
  const VulkanApi &api = device.api();
  VkDevice d = static_cast<VkDevice>(device.handle());
  size_t bytes = 0;
  KILN_VK_TRY(api.vkGetPipelineCacheData(d, vk->pipelineCache, &bytes, nullptr),
              "vkGetPipelineCacheData");
  std::string data(bytes, '\0');
  KILN_VK_TRY(api.vkGetPipelineCacheData(d, vk->pipelineCache, &bytes, data.data()),
              "vkGetPipelineCacheData");
  data.resize(bytes);
  return data;
}

Expected<void> VulkanProgram::run(void **buffers) {
  std::lock_guard lock(mutex);
  for (size_t i = 0; i < plan.inputCount; ++i)
    copyBytes(vk->stagingData + vk->stagingOffsets[i], buffers[i], plan.bufferBytes[i]);
  if (auto ok = submit(vk->runCommands); !ok)
    return ok;
  for (size_t o = 0; o < plan.outputCount; ++o) {
    size_t b = plan.inputCount + o;
    copyBytes(buffers[b], vk->stagingData + vk->stagingOffsets[b], plan.bufferBytes[b]);
  }
  return {};
}

Expected<double> VulkanProgram::timeLaunches() {
  std::lock_guard lock(mutex);
  if (!vk->timestamps)
    return makeError(ErrorKind::Unsupported,
                     "vulkan: the device has no compute timestamps");
  if (auto ok = submit(vk->timedCommands); !ok)
    return std::unexpected(ok.error());
  uint64_t ticks[2];
  const VulkanApi &api = device.api();
  KILN_VK_TRY(api.vkGetQueryPoolResults(static_cast<VkDevice>(device.handle()),
                                        vk->timestamps, 0, 2, sizeof ticks, ticks,
                                        sizeof(uint64_t),
                                        VK_QUERY_RESULT_64_BIT |
                                            VK_QUERY_RESULT_WAIT_BIT),
              "vkGetQueryPoolResults");
  return double(ticks[1] - ticks[0]) * device.properties().timestampPeriodNs * 1e-6;
}

VulkanProgram::~VulkanProgram() {
  const VulkanApi &api = device.api();
  VkDevice d = static_cast<VkDevice>(device.handle());
  api.vkDeviceWaitIdle(d);
  if (vk->fence) api.vkDestroyFence(d, vk->fence, nullptr);
  if (vk->timestamps) api.vkDestroyQueryPool(d, vk->timestamps, nullptr);
  if (vk->commandPool) api.vkDestroyCommandPool(d, vk->commandPool, nullptr);
  if (vk->descriptorPool) api.vkDestroyDescriptorPool(d, vk->descriptorPool, nullptr);
  for (VkPipeline p : vk->pipelines) api.vkDestroyPipeline(d, p, nullptr);
  for (VkPipelineLayout l : vk->pipelineLayouts) api.vkDestroyPipelineLayout(d, l, nullptr);
  for (VkDescriptorSetLayout l : vk->setLayouts) api.vkDestroyDescriptorSetLayout(d, l, nullptr);
  if (vk->pipelineCache) api.vkDestroyPipelineCache(d, vk->pipelineCache, nullptr);
  for (VkShaderModule m : vk->modules) api.vkDestroyShaderModule(d, m, nullptr);
  destroyVulkanBuffer(device, vk->staging);
  for (const VulkanBuffer &b : vk->buffers)
    destroyVulkanBuffer(device, b);
}

} // namespace kiln
