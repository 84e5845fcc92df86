//===- DeviceQueue.cpp - CUDA and host-memory device queues --------------===//
#include "DeviceQueue.h"
#include "kiln/runtime/common/CopyBytes.h"

#include "kiln/runtime/vulkan/VulkanExecutor.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <new>
#include <unistd.h>

namespace kiln {
namespace {

/// Host memory for tensors. A request beyond the machine's RAM is refused
/// up front: with overcommit it would "succeed" and the process would be
/// killed when the kernel touches it.
Expected<uint64_t> allocateHost(size_t bytes) {
  static const size_t physical =
      static_cast<size_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
  if (bytes > physical)
    return makeError(ErrorKind::OutOfMemory,
                     "host memory: " + std::to_string(bytes) + " bytes asked, the machine has " +
                         std::to_string(physical));
  try {
    return reinterpret_cast<uint64_t>(allocateHostBuffer(bytes));
  } catch (const std::bad_alloc &) {
    return makeError(ErrorKind::OutOfMemory,
                     "host memory: cannot allocate " + std::to_string(bytes) + " bytes");
  }
}

Expected<std::shared_ptr<void>> hostStaging(size_t bytes) {
  auto p = allocateHost(bytes);
  if (!p)
    return std::unexpected(p.error());
  return std::shared_ptr<void>(reinterpret_cast<void *>(*p), freeHostBuffer);
}

/// Host and Vulkan marks: a time in milliseconds.
std::shared_ptr<void> hostMark() {
  return std::make_shared<double>(std::chrono::duration<double, std::milli>(
                                      std::chrono::steady_clock::now().time_since_epoch())
                                      .count());
}

double millisecondsBetween(void *start, void *end) {
  return *static_cast<double *>(end) - *static_cast<double *>(start);
}

/// Tensors in host memory; launches run synchronously as they are made.
class HostQueue final : public DeviceQueue {
public:
  explicit HostQueue(std::shared_ptr<Engine> engine)
      : DeviceQueue(std::move(engine)), memoryPool(MemoryPool::PageSource{
            allocateHost,
            [](uint64_t address) { freeHostBuffer(reinterpret_cast<void *>(address)); }}) {}

  MemoryPool &pool() override { return memoryPool; }
  Expected<uint64_t> allocateExact(size_t bytes) override { return allocateHost(bytes); }
  void releaseExact(uint64_t address) override {
    freeHostBuffer(reinterpret_cast<void *>(address));
  }
  Expected<void> write(uint64_t dst, const void *src, size_t bytes) override {
    copyBytes(reinterpret_cast<void *>(dst), src, bytes);
    return {};
  }
  Expected<void> read(void *dst, uint64_t src, size_t bytes) override {
    copyBytes(dst, reinterpret_cast<const void *>(src), bytes);
    return {};
  }
  Expected<void> launch(const Program &program, const std::vector<uint64_t> &buffers) override {
    auto ok = program.launch(buffers);
    // A lost Vulkan device stays lost: later calls are refused at once.
    if (!ok && ok.error().kind == ErrorKind::DevicePoisoned)
      lost = true;
    return ok;
  }
  Expected<void> sync() override { return {}; }
  bool poisoned() const override { return lost; }

  Expected<std::shared_ptr<void>> mark() override { return hostMark(); }
  Expected<double> elapsedMs(void *start, void *end) override {
    return millisecondsBetween(start, end);
  }
  const char *clockName() const override { return "host"; }
  bool capturesNatively() const override { return false; }

  Expected<std::shared_ptr<void>> allocateStaging(size_t bytes) override {
    return hostStaging(bytes);
  }

private:
  MemoryPool memoryPool;
  bool lost = false;
};

/// Tensors in CUDA device memory; launches queue on the device's stream.
class CudaQueue final : public DeviceQueue {
public:
  CudaQueue(std::shared_ptr<Engine> engine, CudaDevice &device)
      : DeviceQueue(std::move(engine)), device(device) {}

  MemoryPool &pool() override { return device.pool(); }
  Expected<uint64_t> allocateExact(size_t bytes) override { return device.allocate(bytes); }
  void releaseExact(uint64_t address) override { (void)device.free(address); }
  Expected<void> write(uint64_t dst, const void *src, size_t bytes) override {
    return device.copyToDevice(dst, src, bytes);
  }
  Expected<void> read(void *dst, uint64_t src, size_t bytes) override {
    if (auto ok = device.sync(); !ok)
      return ok;
    return device.copyToHost(dst, src, bytes);
  }
  Expected<void> launch(const Program &program, const std::vector<uint64_t> &buffers) override {
    return program.launch(buffers);
  }
  Expected<void> sync() override { return device.sync(); }
  bool poisoned() const override { return device.poisoned(); }

  Expected<std::shared_ptr<void>> mark() override {
    auto event = device.recordEvent();
    if (!event)
      return std::unexpected(event.error());
    return std::shared_ptr<void>(*event, [&device = device](void *e) { device.destroyEvent(e); });
  }
  Expected<double> elapsedMs(void *start, void *end) override {
    return device.elapsedMs(start, end);
  }
  const char *clockName() const override { return "cuda-events"; }

  bool capturesNatively() const override { return true; }
  Expected<void> beginCapture() override { return device.beginCapture(); }
  Expected<std::shared_ptr<void>> endCapture() override {
    auto graph = device.endCapture();
    if (!graph)
      return std::unexpected(graph.error());
    return std::shared_ptr<void>(*graph, [&device = device](void *g) { device.destroyGraph(g); });
  }
  Expected<void> replay(void *graph) override { return device.launchGraph(graph); }

  Expected<std::shared_ptr<void>> allocateStaging(size_t bytes) override {
    auto p = device.allocatePinned(bytes);
    if (!p)
      return std::unexpected(p.error());
    return std::shared_ptr<void>(*p, [&device = device](void *q) { (void)device.freePinned(q); });
  }

private:
  CudaDevice &device;
};

/// Tensors in Vulkan device memory; launches submit and wait; device
/// timestamps; captures recorded into one command buffer.
class VulkanQueue final : public DeviceQueue {
public:
  VulkanQueue(std::shared_ptr<Engine> engine, std::unique_ptr<VulkanExecutor> executor)
      : DeviceQueue(std::move(engine)), executor(std::move(executor)) {}

  MemoryPool &pool() override { return executor->pool(); }
  Expected<uint64_t> allocateExact(size_t bytes) override {
    return executor->allocatePage(bytes);
  }
  void releaseExact(uint64_t address) override { executor->releasePage(address); }
  Expected<void> write(uint64_t dst, const void *src, size_t bytes) override {
    return executor->write(dst, src, bytes);
  }
  Expected<void> read(void *dst, uint64_t src, size_t bytes) override {
    return executor->read(dst, src, bytes);
  }
  Expected<void> launch(const Program &program, const std::vector<uint64_t> &buffers) override {
    return executor->launch(*program.vulkanProgram(), buffers);
  }
  Expected<void> sync() override { return {}; } // every submit is waited for
  bool poisoned() const override { return executor->lost(); }

  Expected<std::shared_ptr<void>> mark() override {
    if (!executor->hasTimestamps())
      return hostMark();
    auto ns = executor->timestampNs();
    if (!ns)
      return std::unexpected(ns.error());
    return std::make_shared<double>(*ns * 1e-6);
  }
  Expected<double> elapsedMs(void *start, void *end) override {
    return millisecondsBetween(start, end);
  }
  const char *clockName() const override {
    return executor->hasTimestamps() ? "vulkan-timestamps" : "host";
  }

  bool capturesNatively() const override { return true; }
  Expected<void> beginCapture() override { return executor->beginCapture(); }
  Expected<std::shared_ptr<void>> endCapture() override { return executor->endCapture(); }
  Expected<void> replay(void *graph) override { return executor->replay(graph); }

  Expected<std::shared_ptr<void>> allocateStaging(size_t bytes) override {
    return hostStaging(bytes);
  }

private:
  std::unique_ptr<VulkanExecutor> executor;
};

} // namespace

Expected<uint64_t> DeviceQueue::allocatePersistent(size_t bytes) {
  auto address = allocateExact(bytes);
  if (!address)
    return address;
  persistentPeak = std::max(persistentPeak, ++persistentLive);
  persistentLargest = std::max(persistentLargest, bytes);
  persistentBytes += bytes;
  return address;
}

void DeviceQueue::releasePersistent(uint64_t address, size_t bytes) {
  releaseExact(address);
  --persistentLive;
  persistentBytes -= bytes;
}

PoolReport DeviceQueue::persistentReport() const {
  PoolReport r;
  r.name = "persistent";
  r.pages = persistentLive;
  r.pagesPeak = persistentPeak;
  r.largestAlloc = persistentLargest;
  return r;
}

MemoryUsage DeviceQueue::persistentUsage() const {
  MemoryUsage u;
  u.numberAllocs = persistentLive;
  u.bytesInUse = u.bytesReserved = persistentBytes;
  return u;
}

Expected<std::shared_ptr<DeviceQueue>> makeDeviceQueue(std::shared_ptr<Engine> engine) {
  if (CudaDevice *cuda = engine->cudaDevice())
    return std::make_shared<CudaQueue>(std::move(engine), *cuda);
  if (VulkanDevice *vulkan = engine->vulkanDevice()) {
    auto executor = VulkanExecutor::create(*vulkan);
    if (!executor)
      return std::unexpected(executor.error());
    return std::make_shared<VulkanQueue>(std::move(engine), std::move(*executor));
  }
  return std::make_shared<HostQueue>(std::move(engine));
}

} // namespace kiln
