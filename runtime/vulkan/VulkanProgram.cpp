//===- VulkanProgram.cpp - running a GpuPlan on a Vulkan device ----------===//
#include "kiln/runtime/VulkanProgram.h"

#include "VulkanApi.h"

#include <cstring>
#include <map>

namespace kiln {

struct VulkanProgram::Resources {
  struct Buffer {
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceMemory memory = VK_NULL_HANDLE;
    VkDeviceSize bytes = 0;
  };
  std::vector<Buffer> buffers;
  Buffer staging;
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

namespace {
constexpr uint64_t kWaitNanoseconds = 600ull * 1000 * 1000 * 1000;

Expected<void> check(VkResult r, const char *what) {
  if (r == VK_SUCCESS)
    return {};
  if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
    return makeError(ErrorKind::OutOfMemory, describeVkResult(what, r));
  if (r == VK_ERROR_DEVICE_LOST)
    return makeError(ErrorKind::DevicePoisoned, describeVkResult(what, r));
  return makeError(ErrorKind::Launch, describeVkResult(what, r));
}

#define KILN_VK_TRY(call, what)                                                \
  if (auto ok = check(call, what); !ok)                                        \
    return std::unexpected(ok.error());

/// A barrier between everything `src` wrote and what `dst` reads or writes.
void barrier(const VulkanApi &api, VkCommandBuffer cb, VkPipelineStageFlags src,
             VkAccessFlags srcAccess, VkPipelineStageFlags dst,
             VkAccessFlags dstAccess) {
  VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  b.srcAccessMask = srcAccess;
  b.dstAccessMask = dstAccess;
  api.vkCmdPipelineBarrier(cb, src, dst, 0, 1, &b, 0, nullptr, 0, nullptr);
}
} // namespace

VulkanProgram::VulkanProgram(VulkanDevice &device, GpuPlan plan)
    : device(device), plan(std::move(plan)), vk(std::make_unique<Resources>()) {}

static Expected<VulkanProgram::Resources::Buffer>
createBuffer(VulkanDevice &device, VkDeviceSize bytes, VkBufferUsageFlags usage,
             VkMemoryPropertyFlags want) {
  const VulkanApi &api = device.api();
  VkDevice d = static_cast<VkDevice>(device.handle());
  VulkanProgram::Resources::Buffer b;
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
    return makeError(ErrorKind::Unsupported, "vulkan: no memory type with flags " +
                                                 std::to_string(want));
  }
  VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  alloc.allocationSize = req.size;
  alloc.memoryTypeIndex = static_cast<uint32_t>(type);
  if (auto ok = check(api.vkAllocateMemory(d, &alloc, nullptr, &b.memory),
                      "vkAllocateMemory");
      !ok) {
    api.vkDestroyBuffer(d, b.buffer, nullptr);
    Error e = ok.error();
    e.message = "vulkan: allocating " + std::to_string(bytes) + " bytes: " + e.message;
    return std::unexpected(e);
  }
  KILN_VK_TRY(api.vkBindBufferMemory(d, b.buffer, b.memory, 0), "vkBindBufferMemory");
  return b;
}

Expected<std::unique_ptr<VulkanProgram>> VulkanProgram::load(VulkanDevice &device,
                                                             GpuPlan plan) {
  const VulkanDeviceProperties &props = device.properties();
  for (const KernelLaunch &launch : plan.launches) {
    for (int d = 0; d < 3; ++d)
      if (launch.shape.grid[d] > props.maxWorkgroupCount[d])
        return makeError(ErrorKind::Unsupported,
                         "vulkan: kernel " + launch.kernel + " needs " +
                             std::to_string(launch.shape.grid[d]) +
                             " workgroups in dim " + std::to_string(d) +
                             ", the device allows " +
                             std::to_string(props.maxWorkgroupCount[d]));
    for (const KernelArgument &arg : launch.arguments)
      if (std::holds_alternative<ScalarArgument>(arg))
        return makeError(ErrorKind::Unsupported,
                         "vulkan: kernel " + launch.kernel +
                             " takes a scalar parameter, which kiln cannot pass yet");
  }
  for (size_t bytes : plan.bufferBytes)
    if (bytes > props.maxStorageBufferRange)
      return makeError(ErrorKind::Unsupported,
                       "vulkan: a buffer of " + std::to_string(bytes) +
                           " bytes exceeds the device's maxStorageBufferRange (" +
                           std::to_string(props.maxStorageBufferRange) + ")");

  std::unique_ptr<VulkanProgram> program(new VulkanProgram(device, std::move(plan)));
  const GpuPlan &p = program->plan;
  Resources &vk = *program->vk;
  const VulkanApi &api = device.api();
  VkDevice d = static_cast<VkDevice>(device.handle());

  for (size_t bytes : p.bufferBytes) {
    auto b = createBuffer(device, bytes,
                          VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                              VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                              VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                          VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    if (!b)
      return std::unexpected(b.error());
    vk.buffers.push_back(*b);
  }
  VkDeviceSize stagingBytes = 0;
  for (size_t i = 0; i < p.inputCount + p.outputCount; ++i) {
    vk.stagingOffsets.push_back(stagingBytes);
    stagingBytes += (p.bufferBytes[i] + 15) / 16 * 16;
  }
  auto staging = createBuffer(device, stagingBytes,
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
  VkPipelineCacheCreateInfo cacheInfo{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  KILN_VK_TRY(api.vkCreatePipelineCache(d, &cacheInfo, nullptr, &vk.pipelineCache),
              "vkCreatePipelineCache");

  // One pipeline per (module, kernel); launches of it share it.
  std::map<std::pair<int, std::string>, size_t> pipelineIndex;
  uint32_t descriptors = 0;
  for (const KernelLaunch &launch : p.launches) {
    descriptors += launch.arguments.size();
    auto [it, added] = pipelineIndex.try_emplace({launch.module, launch.kernel},
                                                 vk.pipelines.size());
    vk.pipelineOf.push_back(it->second);
    if (!added)
      continue;
    std::vector<VkDescriptorSetLayoutBinding> bindings(launch.arguments.size());
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
    VkPipeline pipeline;
    KILN_VK_TRY(api.vkCreateComputePipelines(d, vk.pipelineCache, 1, &info, nullptr,
                                             &pipeline),
                "vkCreateComputePipelines");
    vk.pipelines.push_back(pipeline);
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
  for (size_t l = 0; l < p.launches.size(); ++l) {
    VkDescriptorSetAllocateInfo alloc{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    alloc.descriptorPool = vk.descriptorPool;
    alloc.descriptorSetCount = 1;
    alloc.pSetLayouts = &vk.setLayouts[vk.pipelineOf[l]];
    VkDescriptorSet set;
    KILN_VK_TRY(api.vkAllocateDescriptorSets(d, &alloc, &set),
                "vkAllocateDescriptorSets");
    vk.sets.push_back(set);
    const auto &args = p.launches[l].arguments;
    std::vector<VkDescriptorBufferInfo> infos(args.size());
    std::vector<VkWriteDescriptorSet> writes(args.size());
    for (uint32_t i = 0; i < args.size(); ++i) {
      // The whole buffer: a view's offset and strides are in the kernel.
      infos[i] = {vk.buffers[std::get<BufferView>(args[i]).buffer].buffer, 0,
                  VK_WHOLE_SIZE};
      writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
      writes[i].dstSet = set;
      writes[i].dstBinding = i;
      writes[i].descriptorCount = 1;
      writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      writes[i].pBufferInfo = &infos[i];
    }
    api.vkUpdateDescriptorSets(d, writes.size(), writes.data(), 0, nullptr);
  }

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

  auto recordLaunches = [&](VkCommandBuffer cb) {
    for (size_t l = 0; l < p.launches.size(); ++l) {
      size_t pipe = vk.pipelineOf[l];
      api.vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, vk.pipelines[pipe]);
      api.vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE,
                                  vk.pipelineLayouts[pipe], 0, 1, &vk.sets[l], 0,
                                  nullptr);
      const auto &grid = p.launches[l].shape.grid;
      api.vkCmdDispatch(cb, grid[0], grid[1], grid[2]);
      barrier(api, cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
              VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
              VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
    }
  };
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  KILN_VK_TRY(api.vkBeginCommandBuffer(vk.runCommands, &begin), "vkBeginCommandBuffer");
  for (size_t i = 0; i < p.inputCount; ++i) {
    VkBufferCopy copy{vk.stagingOffsets[i], 0, std::max<VkDeviceSize>(p.bufferBytes[i], 1)};
    if (p.bufferBytes[i])
      api.vkCmdCopyBuffer(vk.runCommands, vk.staging.buffer, vk.buffers[i].buffer, 1, &copy);
  }
  barrier(api, vk.runCommands, VK_PIPELINE_STAGE_TRANSFER_BIT,
          VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
          VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
  recordLaunches(vk.runCommands);
  barrier(api, vk.runCommands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
          VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
          VK_ACCESS_TRANSFER_READ_BIT);
  for (size_t o = 0; o < p.outputCount; ++o) {
    size_t b = p.inputCount + o;
    VkBufferCopy copy{0, vk.stagingOffsets[b], p.bufferBytes[b]};
    if (p.bufferBytes[b])
      api.vkCmdCopyBuffer(vk.runCommands, vk.buffers[b].buffer, vk.staging.buffer, 1, &copy);
  }
  barrier(api, vk.runCommands, VK_PIPELINE_STAGE_TRANSFER_BIT,
          VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
          VK_ACCESS_HOST_READ_BIT);
  KILN_VK_TRY(api.vkEndCommandBuffer(vk.runCommands), "vkEndCommandBuffer");

  KILN_VK_TRY(api.vkBeginCommandBuffer(vk.timedCommands, &begin), "vkBeginCommandBuffer");
  if (vk.timestamps) {
    api.vkCmdResetQueryPool(vk.timedCommands, vk.timestamps, 0, 2);
    api.vkCmdWriteTimestamp(vk.timedCommands, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
                            vk.timestamps, 0);
  }
  recordLaunches(vk.timedCommands);
  if (vk.timestamps)
    api.vkCmdWriteTimestamp(vk.timedCommands, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
                            vk.timestamps, 1);
  KILN_VK_TRY(api.vkEndCommandBuffer(vk.timedCommands), "vkEndCommandBuffer");
  return program;
}

Expected<void> VulkanProgram::submit(void *commandBuffer) {
  const VulkanApi &api = device.api();
  VkDevice d = static_cast<VkDevice>(device.handle());
  VkCommandBuffer cb = static_cast<VkCommandBuffer>(commandBuffer);
  VkSubmitInfo info{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  info.commandBufferCount = 1;
  info.pCommandBuffers = &cb;
  KILN_VK_TRY(api.vkResetFences(d, 1, &vk->fence), "vkResetFences");
  KILN_VK_TRY(api.vkQueueSubmit(static_cast<VkQueue>(device.queueHandle()), 1, &info,
                                vk->fence),
              "vkQueueSubmit");
  VkResult r = api.vkWaitForFences(d, 1, &vk->fence, VK_TRUE, kWaitNanoseconds);
  if (r == VK_TIMEOUT)
    return makeError(ErrorKind::DevicePoisoned,
                     "vulkan: a submission did not finish within 600 s");
  return check(r, "vkWaitForFences");
}

Expected<void> VulkanProgram::run(void **buffers) {
  std::lock_guard lock(mutex);
  for (size_t i = 0; i < plan.inputCount; ++i)
    std::memcpy(vk->stagingData + vk->stagingOffsets[i], buffers[i], plan.bufferBytes[i]);
  if (auto ok = submit(vk->runCommands); !ok)
    return ok;
  for (size_t o = 0; o < plan.outputCount; ++o) {
    size_t b = plan.inputCount + o;
    std::memcpy(buffers[b], vk->stagingData + vk->stagingOffsets[b], plan.bufferBytes[b]);
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
  auto release = [&](const Resources::Buffer &b) {
    if (b.buffer) api.vkDestroyBuffer(d, b.buffer, nullptr);
    if (b.memory) api.vkFreeMemory(d, b.memory, nullptr);
  };
  release(vk->staging);
  for (const Resources::Buffer &b : vk->buffers)
    release(b);
}

} // namespace kiln
