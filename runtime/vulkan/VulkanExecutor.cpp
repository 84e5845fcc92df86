//===- VulkanExecutor.cpp - device-resident work on a Vulkan device ------===//
#include "kiln/runtime/vulkan/VulkanExecutor.h"
#include "kiln/runtime/common/CopyBytes.h"

#include "VulkanCommon.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>

namespace kiln {

namespace {
constexpr int kPageShift = 40;
constexpr uint64_t kOffsetMask = (uint64_t(1) << kPageShift) - 1;
} // namespace

/// One submission's commands and everything they use, reused once its
/// fence has signalled.
struct VulkanExecutor::Batch {
  VkCommandBuffer commands = VK_NULL_HANDLE;
  VkFence done = VK_NULL_HANDLE;
  /// Descriptor sets for kLaunchesPerBatch launches; a program with more
  /// than fit gets a pool of its own, destroyed with the batch's reuse.
  VkDescriptorPool sets = VK_NULL_HANDLE;
  uint32_t setsLeft = 0, descriptorsLeft = 0;
  std::vector<VkDescriptorPool> oversizedSets;
  /// Host-visible bytes that uploads and reads of this batch go through.
  VulkanBuffer staging;
  std::byte *stagingData = nullptr;
  VkDeviceSize stagingUsed = 0;
  uint32_t launches = 0;
};

namespace {
/// Descriptors per launch that a batch's own pool provides for on average.
constexpr uint32_t kDescriptorsPerLaunch = 8;
} // namespace

struct VulkanExecutor::Resources {
  std::map<uint64_t, VulkanBuffer> pages; // by page number
  uint64_t nextPage = 1;
  VkCommandPool commandPool = VK_NULL_HANDLE;
  std::unique_ptr<Batch> open;                   // being recorded
  std::deque<std::unique_ptr<Batch>> submitted;  // oldest first
  std::vector<std::unique_ptr<Batch>> available; // done, ready for reuse
  VkQueryPool timestamps = VK_NULL_HANDLE;
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

static void destroyBatch(VulkanDevice &device, VulkanExecutor::Batch &batch) {
  const VulkanApi &api = device.api();
  VkDevice d = static_cast<VkDevice>(device.handle());
  if (batch.done)
    api.vkDestroyFence(d, batch.done, nullptr);
  if (batch.sets)
    api.vkDestroyDescriptorPool(d, batch.sets, nullptr);
  for (VkDescriptorPool pool : batch.oversizedSets)
    api.vkDestroyDescriptorPool(d, pool, nullptr);
  destroyVulkanBuffer(device, batch.staging);
}

/// Makes a batch whose commands are done (or never ran) ready for reuse.
static Expected<void> resetBatch(VulkanDevice &device, VulkanExecutor::Batch &batch) {
  const VulkanApi &api = device.api();
  VkDevice d = static_cast<VkDevice>(device.handle());
  for (VkDescriptorPool pool : batch.oversizedSets)
    api.vkDestroyDescriptorPool(d, pool, nullptr);
  batch.oversizedSets.clear();
  batch.stagingUsed = 0;
  batch.launches = 0;
  return checkVk(api.vkResetDescriptorPool(d, batch.sets, 0), "vkResetDescriptorPool");
}

VulkanExecutor::~VulkanExecutor() {
  const VulkanApi &api = device.api();
  VkDevice d = static_cast<VkDevice>(device.handle());
  api.vkDeviceWaitIdle(d);
  memoryPool.reset();
  for (auto &[page, buffer] : vk->pages)
    destroyVulkanBuffer(device, buffer);
  if (vk->open)
    destroyBatch(device, *vk->open);
  for (auto &batch : vk->submitted)
    destroyBatch(device, *batch);
  for (auto &batch : vk->available)
    destroyBatch(device, *batch);
  if (vk->timestamps)
    api.vkDestroyQueryPool(d, vk->timestamps, nullptr);
  if (vk->commandPool)
    api.vkDestroyCommandPool(d, vk->commandPool, nullptr); // frees the command buffers
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
  // Queued commands may use the page: they run first. (A failure here is a
  // lost device, which sync reports.)
  (void)flush();
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

Expected<void> VulkanExecutor::noteFailure(Expected<void> result) {
  if (!result && result.error().kind == ErrorKind::DevicePoisoned)
    deviceLost = true;
  return result;
}

Expected<VulkanExecutor::Batch *> VulkanExecutor::openBatch() {
  if (vk->open)
    return vk->open.get();
  if (auto ok = recycle(); !ok)
    return std::unexpected(ok.error());
  std::unique_ptr<Batch> batch;
  if (!vk->available.empty()) {
    batch = std::move(vk->available.back());
    vk->available.pop_back();
  } else {
    batch = std::make_unique<Batch>();
    auto cb = allocateCommandBuffer(device, vk->commandPool);
    if (!cb)
      return std::unexpected(cb.error());
    batch->commands = *cb;
    VkFenceCreateInfo fenceInfo{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    KILN_VK_TRY(device.api().vkCreateFence(static_cast<VkDevice>(device.handle()), &fenceInfo,
                                           nullptr, &batch->done),
                "vkCreateFence");
    auto sets = createDescriptorPool(device, kLaunchesPerBatch,
                                     kLaunchesPerBatch * kDescriptorsPerLaunch);
    if (!sets) {
      destroyBatch(device, *batch);
      return std::unexpected(sets.error());
    }
    batch->sets = *sets;
  }
  batch->setsLeft = kLaunchesPerBatch;
  batch->descriptorsLeft = kLaunchesPerBatch * kDescriptorsPerLaunch;
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  if (auto ok = checkVk(device.api().vkBeginCommandBuffer(batch->commands, &begin),
                        "vkBeginCommandBuffer");
      !ok) {
    vk->available.push_back(std::move(batch));
    return std::unexpected(ok.error());
  }
  vk->open = std::move(batch);
  return vk->open.get();
}

Expected<VulkanExecutor::Batch *> VulkanExecutor::openBatchWithStaging(size_t bytes) {
  auto batch = openBatch();
  if (!batch)
    return batch;
  if ((*batch)->stagingUsed > 0 && (*batch)->staging.bytes - (*batch)->stagingUsed < bytes) {
    if (auto ok = submitOpen(); !ok)
      return std::unexpected(ok.error());
    batch = openBatch();
    if (!batch)
      return batch;
  }
  Batch &b = **batch;
  if (b.staging.bytes - b.stagingUsed >= bytes)
    return batch;
  if (bytes > kLargeTransferBytes) {
    if (!vk->submitted.empty())
      if (auto ok = waitFor(*vk->submitted.back()); !ok)
        return std::unexpected(ok.error());
    for (auto &idle : vk->available)
      if (idle->staging.bytes > kLargeTransferBytes) {
        destroyVulkanBuffer(device, idle->staging);
        idle->staging = {};
        idle->stagingData = nullptr;
      }
  }
  // No copy recorded in this batch uses its staging yet: it may be replaced.
  destroyVulkanBuffer(device, b.staging);
  b.staging = {};
  auto staging = createVulkanBuffer(
      device, std::max<size_t>(bytes, 1 << 20),
      VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
  if (!staging)
    return std::unexpected(staging.error());
  b.staging = *staging;
  void *mapped = nullptr;
  KILN_VK_TRY(device.api().vkMapMemory(static_cast<VkDevice>(device.handle()), b.staging.memory,
                                       0, VK_WHOLE_SIZE, 0, &mapped),
              "vkMapMemory");
  b.stagingData = static_cast<std::byte *>(mapped);
  return batch;
}

Expected<void> VulkanExecutor::submitOpen(VkCommandBuffer replayed) {
  if (!vk->open)
    return {};
  std::unique_ptr<Batch> batch = std::move(vk->open);
  VkCommandBuffer commands[2] = {batch->commands, replayed};
  auto submitted = checkVk(device.api().vkEndCommandBuffer(batch->commands),
                           "vkEndCommandBuffer");
  if (submitted)
    submitted = noteFailure(submitCommands(device, {commands, replayed ? 2u : 1u}, batch->done));
  if (!submitted) {
    // Nothing of it runs; its resources are free again.
    (void)resetBatch(device, *batch);
    vk->available.push_back(std::move(batch));
    return submitted;
  }
  vk->submitted.push_back(std::move(batch));
  if (vk->submitted.size() > kMaxBatchesInFlight)
    return waitFor(*vk->submitted.front());
  return {};
}

Expected<void> VulkanExecutor::submitIfDue() {
  if (auto ok = recycle(); !ok)
    return ok;
  // An idle device starts at once; a busy one gets launches in batches.
  if (vk->submitted.empty() || vk->open->launches >= kLaunchesPerBatch)
    return submitOpen();
  return {};
}

Expected<void> VulkanExecutor::recycle() {
  const VulkanApi &api = device.api();
  VkDevice d = static_cast<VkDevice>(device.handle());
  while (!vk->submitted.empty()) {
    Batch &batch = *vk->submitted.front();
    VkResult status = api.vkGetFenceStatus(d, batch.done);
    if (status == VK_NOT_READY)
      return {};
    if (auto ok = noteFailure(checkVk(status, "vkGetFenceStatus")); !ok)
      return ok;
    if (auto ok = resetBatch(device, batch); !ok)
      return ok;
    vk->available.push_back(std::move(vk->submitted.front()));
    vk->submitted.pop_front();
  }
  return {};
}

Expected<void> VulkanExecutor::waitFor(const Batch &batch) {
  auto last = std::find_if(vk->submitted.begin(), vk->submitted.end(),
                           [&](const auto &b) { return b.get() == &batch; });
  if (last == vk->submitted.end()) // done and recycled already
    return {};
  std::vector<VkFence> fences;
  for (auto it = vk->submitted.begin(); it <= last; ++it)
    fences.push_back((*it)->done);
  if (auto ok = noteFailure(waitForFences(device, fences)); !ok)
    return ok;
  return recycle();
}

Expected<void> VulkanExecutor::flush() { return submitOpen(); }

Expected<void> VulkanExecutor::sync() {
  if (auto ok = flush(); !ok)
    return ok;
  if (!vk->submitted.empty())
    if (auto ok = waitFor(*vk->submitted.back()); !ok)
      return ok;
  if (deviceLost)
    return makeError(ErrorKind::DevicePoisoned, "vulkan: the device was lost");
  return {};
}

Expected<void> VulkanExecutor::write(uint64_t dst, const void *src, size_t bytes) {
  if (bytes == 0)
    return {};
  auto to = resolve(dst);
  if (!to)
    return std::unexpected(to.error());
  auto batch = openBatchWithStaging(bytes);
  if (!batch)
    return std::unexpected(batch.error());
  Batch &b = **batch;
  copyBytes(b.stagingData + b.stagingUsed, src, bytes);
  const VulkanApi &api = device.api();
  VkBufferCopy copy{b.stagingUsed, to->offset, bytes};
  api.vkCmdCopyBuffer(b.commands, b.staging.buffer, static_cast<VkBuffer>(to->buffer), 1, &copy);
  deviceWorkBarrier(api, b.commands);
  b.stagingUsed += (bytes + 15) / 16 * 16;
  return submitIfDue();
}

Expected<void> VulkanExecutor::read(void *dst, uint64_t src, size_t bytes) {
  if (bytes == 0)
    return {};
  auto from = resolve(src);
  if (!from)
    return std::unexpected(from.error());
  auto batch = openBatchWithStaging(bytes);
  if (!batch)
    return std::unexpected(batch.error());
  Batch &b = **batch;
  const VulkanApi &api = device.api();
  VkDeviceSize at = b.stagingUsed;
  VkBufferCopy copy{from->offset, at, bytes};
  api.vkCmdCopyBuffer(b.commands, static_cast<VkBuffer>(from->buffer), b.staging.buffer, 1,
                      &copy);
  vulkanBarrier(api, b.commands, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
  b.stagingUsed += (bytes + 15) / 16 * 16;
  // The copy is the last command queued: waiting for its batch waits for
  // what it reads and nothing later. The staging bytes stay put until the
  // batch is reopened.
  if (auto ok = submitOpen(); !ok)
    return ok;
  if (auto ok = waitFor(b); !ok)
    return ok;
  copyBytes(dst, b.stagingData + at, bytes);
  return {};
}

Expected<void> VulkanExecutor::launch(VulkanProgram &program,
                                      const std::vector<uint64_t> &addresses,
                                      const GpuPlan *sized) {
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
  uint32_t sets = program.launchCount(), descriptors = program.descriptorCount();
  if (capturing) {
    auto pool = createDescriptorPool(device, sets, descriptors);
    if (!pool)
      return std::unexpected(pool.error());
    capturing->pools.push_back(*pool);
    return program.record(capturing->commands, *pool, bindings, sized);
  }
  auto batch = openBatch();
  if (!batch)
    return std::unexpected(batch.error());
  auto fits = [&](const Batch &b) {
    return sets <= b.setsLeft && descriptors <= b.descriptorsLeft;
  };
  if (!fits(**batch) && (*batch)->launches > 0) {
    if (auto ok = submitOpen(); !ok)
      return ok;
    batch = openBatch();
    if (!batch)
      return std::unexpected(batch.error());
  }
  Batch &b = **batch;
  VkDescriptorPool pool = b.sets;
  if (fits(b)) {
    b.setsLeft -= sets;
    b.descriptorsLeft -= descriptors;
  } else {
    auto own = createDescriptorPool(device, sets, descriptors);
    if (!own)
      return std::unexpected(own.error());
    b.oversizedSets.push_back(pool = *own);
  }
  if (auto ok = program.record(b.commands, pool, bindings, sized); !ok)
    return ok;
  b.launches += sets;
  return submitIfDue();
}

bool VulkanExecutor::hasTimestamps() const { return vk->timestamps != VK_NULL_HANDLE; }

Expected<double> VulkanExecutor::timestampNs() {
  if (!vk->timestamps)
    return makeError(ErrorKind::Unsupported, "vulkan: the device has no compute timestamps");
  const VulkanApi &api = device.api();
  auto batch = openBatch();
  if (!batch)
    return std::unexpected(batch.error());
  Batch &b = **batch;
  api.vkCmdResetQueryPool(b.commands, vk->timestamps, 0, 1);
  api.vkCmdWriteTimestamp(b.commands, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, vk->timestamps, 0);
  if (auto ok = submitOpen(); !ok)
    return std::unexpected(ok.error());
  if (auto ok = waitFor(b); !ok)
    return std::unexpected(ok.error());
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
  // Replays are queued without waits, so one may be submitted while an
  // earlier one is still pending.
  begin.flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT;
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
  // After what is queued (writes refreshing its inputs), in the same
  // submission as the open batch.
  if (auto batch = openBatch(); !batch)
    return std::unexpected(batch.error());
  return submitOpen(static_cast<Graph *>(graph)->commands);
}

} // namespace kiln
