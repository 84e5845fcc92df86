//===- DeviceQueue.cpp - what every device queue shares ------------------===//
#include "DeviceQueue.h"

#include <algorithm>
#include <chrono>
#include <new>
#include <unistd.h>

namespace kiln {

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

void freeHost(uint64_t address) { freeHostBuffer(reinterpret_cast<void *>(address)); }

Expected<std::shared_ptr<void>> allocateHostStaging(size_t bytes) {
  auto p = allocateHost(bytes);
  if (!p)
    return std::unexpected(p.error());
  return std::shared_ptr<void>(reinterpret_cast<void *>(*p), freeHostBuffer);
}

std::shared_ptr<void> hostClockMark() {
  return std::make_shared<double>(std::chrono::duration<double, std::milli>(
                                      std::chrono::steady_clock::now().time_since_epoch())
                                      .count());
}

double millisecondsBetween(void *start, void *end) {
  return *static_cast<double *>(end) - *static_cast<double *>(start);
}

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

} // namespace kiln
