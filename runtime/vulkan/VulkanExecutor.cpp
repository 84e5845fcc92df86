//===- VulkanExecutor.cpp - device-resident work on a Vulkan device ------===//
#include "kiln/runtime/vulkan/VulkanExecutor.h"
#include "kiln/runtime/common/CopyBytes.h"

#include "VulkanCommon.h"

#include <algorithm>
#include <cstring>

namespace kiln {

namespace {
constexpr int kPageShift = 40;
constexpr uint64_t kOffsetMask = (uint64_t(1) << kPageShift) - 1;
} // namespace

struct VulkanExecutor::Resources {
  std::map<uint64_t, VulkanBuffer> pages; // by page number
  uint64_t nextPage = 1;
  VulkanBuffer staging;
  std::byte *stagingData = nullptr;
  VkCommandPool commandPool = VK_NULL_HANDLE;
  VkCommandBuffer oneShot = VK_NULL_HANDLE;
  VkDescriptorPool launchSets = VK_NULL_HANDLE; // reset before each launch
  uint32_t launchSetCapacity = 0, launchDescriptorCapacity = 0;
  VkQueryPool timestamps = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
};

/// A recorded command buffer and the descriptor pools its launches use.
struct VulkanExecutor::Graph {
  VulkanDevice *device = nullptr;
  VkCommandPool commandPool = VK_NULL_HANDLE;
  VkCommandBuffer commands = VK_NULL_HANDLE;
  std::vector<VkDescriptorPool> pools;
  ~Graph() {
    const VulkanApi &api = device->api();
    VkDevice d = static_cast<VkDevice>(device->handle());
    api.vkDeviceWaitIdle(d);
    api.vkFreeCommandBuffers(d, commandPool, 1, &commands);
    for (VkDescriptorPool p : pools)
      api.vkDestroyDescriptorPool(d, p, nullptr);
  }
};

VulkanExecutor::VulkanExecutor(VulkanDevice &device)
    : device(device), vk(std::make_unique<Resources>()) {}

static Expected<VkDescriptorPool> createDescriptorPool(VulkanDevice &device, uint32_t sets,
                                                       uint32_t descriptors) {
  VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, std::max(descriptors, 1u)};
  VkDescriptorPoolCreateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  info.maxSets = std::max(sets, 1u);
  info.poolSizeCount = 1;
  info.pPoolSizes = &size;
  VkDescriptorPool pool;
  KILN_VK_TRY(device.api().vkCreateDescriptorPool(static_cast<VkDevice>(device.handle()), &info,
                                                  nullptr, &pool),
              "vkCreateDescriptorPool");
  return pool;
}

static Expected<VkCommandBuffer> allocateCommandBuffer(VulkanDevice &device, VkCommandPool pool) {
  VkCommandBufferAllocateInfo info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  info.commandPool = pool;
  info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  info.commandBufferCount = 1;
  VkCommandBuffer cb;
  KILN_VK_TRY(device.api().vkAllocateCommandBuffers(static_cast<VkDevice>(device.handle()),
                                                    &info, &cb),
              "vkAllocateCommandBuffers");
  return cb;
}

Expected<std::unique_ptr<VulkanExecutor>> VulkanExecutor::create(VulkanDevice &device) {
  std::unique_ptr<VulkanExecutor> executor(new VulkanExecutor(device));
  Resources &vk = *executor->vk;
  const VulkanApi &api = device.api();
  VkDevice d = static_cast<VkDevice>(device.handle());
  VkCommandPoolCreateInfo poolInfo{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  poolInfo.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  poolInfo.queueFamilyIndex = device.properties().computeQueueFamily;
  KILN_VK_TRY(api.vkCreateCommandPool(d, &poolInfo, nullptr, &vk.commandPool),
              "vkCreateCommandPool");
  auto cb = allocateCommandBuffer(device, vk.commandPool);
  if (!cb)
    return std::unexpected(cb.error());
  vk.oneShot = *cb;
  VkFenceCreateInfo fenceInfo{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  KILN_VK_TRY(api.vkCreateFence(d, &fenceInfo, nullptr, &vk.fence), "vkCreateFence");
  if (device.properties().timestampQueries) {
    VkQueryPoolCreateInfo queryInfo{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    queryInfo.queryType = VK_QUERY_TYPE_TIMESTAMP;
    queryInfo.queryCount = 1;
    KILN_VK_TRY(api.vkCreateQueryPool(d, &queryInfo, nullptr, &vk.timestamps),
                "vkCreateQueryPool");
  }
  VulkanExecutor *self = executor.get();
  executor->memoryPool = std::make_unique<MemoryPool>(MemoryPool::PageSource{
      [self](size_t bytes) { return self->allocatePage(bytes); },
      [self](uint64_t address) { self->releasePage(address); }});
  return executor;
}

VulkanExecutor::~VulkanExecutor() {
  const VulkanApi &api = device.api();
  VkDevice d = static_cast<VkDevice>(device.handle());
  api.vkDeviceWaitIdle(d);
  memoryPool.reset();
  for (auto &[page, buffer] : vk->pages)
    destroyVulkanBuffer(device, buffer);
  destroyVulkanBuffer(device, vk->staging);
  if (vk->launchSets)
    api.vkDestroyDescriptorPool(d, vk->launchSets, nullptr);
  if (vk->timestamps)
    api.vkDestroyQueryPool(d, vk->timestamps, nullptr);
  if (vk->fence)
    api.vkDestroyFence(d, vk->fence, nullptr);
  if (vk->commandPool)
    api.vkDestroyCommandPool(d, vk->commandPool, nullptr);
}

Expected<uint64_t> VulkanExecutor::allocatePage(size_t bytes) {
  if (bytes > device.properties().maxStorageBufferRange)
    return makeError(ErrorKind::OutOfMemory,
                     "vulkan: a buffer of " + std::to_string(bytes) +
                         " bytes exceeds the device's maxStorageBufferRange (" +
                         std::to_string(device.properties().maxStorageBufferRange) + ")");
  auto buffer = createStorageBuffer(device, bytes);
  if (!buffer)
    return std::unexpected(buffer.error());
  uint64_t page = vk->nextPage++;
  vk->pages[page] = *buffer;
  return page << kPageShift;
}

void VulkanExecutor::releasePage(uint64_t address) {
  auto it = vk->pages.find(address >> kPageShift);
  if (it == vk->pages.end())
    return;
  device.api().vkDeviceWaitIdle(static_cast<VkDevice>(device.handle()));
  destroyVulkanBuffer(device, it->second);
  vk->pages.erase(it);
}

Expected<VulkanProgram::Binding> VulkanExecutor::resolve(uint64_t address) const {
  auto it = vk->pages.find(address >> kPageShift);
  if (it == vk->pages.end())
    return makeError(ErrorKind::InvalidArgument,
                     "vulkan: no buffer at address " + std::to_string(address));
  return VulkanProgram::Binding{it->second.buffer, address & kOffsetMask};
}

Expected<void> VulkanExecutor::submit(void *commandBuffer) {
  auto ok = submitAndWait(device, static_cast<VkCommandBuffer>(commandBuffer), vk->fence);
  if (!ok && ok.error().kind == ErrorKind::DevicePoisoned)
    deviceLost = true;
  return ok;
}

Expected<void> VulkanExecutor::runOneShot(
    const std::function<Expected<void>(VkCommandBuffer_T *)> &record) {
  const VulkanApi &api = device.api();
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  KILN_VK_TRY(api.vkBeginCommandBuffer(vk->oneShot, &begin), "vkBeginCommandBuffer");
  if (auto ok = record(vk->oneShot); !ok) {
    api.vkEndCommandBuffer(vk->oneShot);
    return ok;
  }
  KILN_VK_TRY(api.vkEndCommandBuffer(vk->oneShot), "vkEndCommandBuffer");
  return submit(vk->oneShot);
}

Expected<void> VulkanExecutor::ensureStaging(size_t bytes) {
  if (vk->staging.bytes >= bytes)
    return {};
  destroyVulkanBuffer(device, vk->staging);
  vk->staging = {};
  auto staging = createVulkanBuffer(
      device, std::max<size_t>(bytes, 1 << 20),
      VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
  if (!staging)
    return std::unexpected(staging.error());
  vk->staging = *staging;
  void *mapped = nullptr;
  KILN_VK_TRY(device.api().vkMapMemory(static_cast<VkDevice>(device.handle()),
                                       vk->staging.memory, 0, VK_WHOLE_SIZE, 0, &mapped),
              "vkMapMemory");
  vk->stagingData = static_cast<std::byte *>(mapped);
  return {};
}

Expected<void> VulkanExecutor::write(uint64_t dst, const void *src, size_t bytes) {
  if (bytes == 0)
    return {};
  auto to = resolve(dst);
  if (!to)
    return std::unexpected(to.error());
  if (auto ok = ensureStaging(bytes); !ok)
    return ok;
  copyBytes(vk->stagingData, src, bytes);
  const VulkanApi &api = device.api();
  return runOneShot([&](VkCommandBuffer cb) -> Expected<void> {
    VkBufferCopy copy{0, to->offset, bytes};
    api.vkCmdCopyBuffer(cb, vk->staging.buffer, static_cast<VkBuffer>(to->buffer), 1, &copy);
    vulkanBarrier(api, cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                  VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                  VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
    return {};
  });
}

Expected<void> VulkanExecutor::read(void *dst, uint64_t src, size_t bytes) {
  if (bytes == 0)
    return {};
  auto from = resolve(src);
  if (!from)
    return std::unexpected(from.error());
  if (auto ok = ensureStaging(bytes); !ok)
    return ok;
  const VulkanApi &api = device.api();
  auto copied = runOneShot([&](VkCommandBuffer cb) -> Expected<void> {
    VkBufferCopy copy{from->offset, 0, bytes};
    api.vkCmdCopyBuffer(cb, static_cast<VkBuffer>(from->buffer), vk->staging.buffer, 1, &copy);
    vulkanBarrier(api, cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                  VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
    return {};
  });
  if (!copied)
    return copied;
  copyBytes(dst, vk->stagingData, bytes);
  return {};
}

Expected<void> VulkanExecutor::launch(VulkanProgram &program,
                                      const std::vector<uint64_t> &addresses) {
  // A program of empty tensors launches nothing (and has no descriptor pool
  // to reset or make).
  if (program.launchCount() == 0)
    return {};
  std::vector<VulkanProgram::Binding> bindings;
  for (uint64_t address : addresses) {
    auto binding = resolve(address);
    if (!binding)
      return std::unexpected(binding.error());
    bindings.push_back(*binding);
  }
  if (capturing) {
    auto pool = createDescriptorPool(device, program.launchCount(), program.descriptorCount());
    if (!pool)
      return std::unexpected(pool.error());
    capturing->pools.push_back(*pool);
    return program.record(capturing->commands, *pool, bindings);
  }
  const VulkanApi &api = device.api();
  VkDevice d = static_cast<VkDevice>(device.handle());
  if (program.launchCount() > vk->launchSetCapacity ||
      program.descriptorCount() > vk->launchDescriptorCapacity) {
    if (vk->launchSets)
      api.vkDestroyDescriptorPool(d, vk->launchSets, nullptr);
    vk->launchSets = VK_NULL_HANDLE;
    vk->launchSetCapacity = std::max(program.launchCount(), 2 * vk->launchSetCapacity);
    vk->launchDescriptorCapacity =
        std::max(program.descriptorCount(), 2 * vk->launchDescriptorCapacity);
    auto pool = createDescriptorPool(device, vk->launchSetCapacity, vk->launchDescriptorCapacity);
    if (!pool)
      return std::unexpected(pool.error());
    vk->launchSets = *pool;
  } else {
    KILN_VK_TRY(api.vkResetDescriptorPool(d, vk->launchSets, 0), "vkResetDescriptorPool");
  }
  return runOneShot([&](VkCommandBuffer cb) {
    return program.record(cb, vk->launchSets, bindings);
  });
}

bool VulkanExecutor::hasTimestamps() const { return vk->timestamps != VK_NULL_HANDLE; }

Expected<double> VulkanExecutor::timestampNs() {
  if (!vk->timestamps)
    return makeError(ErrorKind::Unsupported, "vulkan: the device has no compute timestamps");
  const VulkanApi &api = device.api();
  auto stamped = runOneShot([&](VkCommandBuffer cb) -> Expected<void> {
    api.vkCmdResetQueryPool(cb, vk->timestamps, 0, 1);
    api.vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, vk->timestamps, 0);
    return {};
  });
  if (!stamped)
    return std::unexpected(stamped.error());
  uint64_t ticks = 0;
  KILN_VK_TRY(api.vkGetQueryPoolResults(static_cast<VkDevice>(device.handle()), vk->timestamps,
                                        0, 1, sizeof ticks, &ticks, sizeof ticks,
                                        VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
              "vkGetQueryPoolResults");
  return double(ticks) * device.properties().timestampPeriodNs;
}

Expected<void> VulkanExecutor::beginCapture() {
  auto graph = std::make_shared<Graph>();
  graph->device = &device;
  graph->commandPool = vk->commandPool;
  auto cb = allocateCommandBuffer(device, vk->commandPool);
  if (!cb)
    return std::unexpected(cb.error());
  graph->commands = *cb;
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  KILN_VK_TRY(device.api().vkBeginCommandBuffer(graph->commands, &begin),
              "vkBeginCommandBuffer");
  capturing = std::move(graph);
  return {};
}

Expected<std::shared_ptr<void>> VulkanExecutor::endCapture() {
  std::shared_ptr<Graph> graph = std::move(capturing);
  capturing = nullptr;
  if (!graph)
    return makeError(ErrorKind::InvalidArgument, "vulkan: no capture is running");
  KILN_VK_TRY(device.api().vkEndCommandBuffer(graph->commands), "vkEndCommandBuffer");
  return std::shared_ptr<void>(graph, graph.get());
}

Expected<void> VulkanExecutor::replay(void *graph) {
  return submit(static_cast<Graph *>(graph)->commands);
}

} // namespace kiln
