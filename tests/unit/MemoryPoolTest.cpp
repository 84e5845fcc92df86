//===- MemoryPoolTest.cpp - memory pools and pooled host buffers ---------===//
#include "kiln/runtime/common/HostTensor.h"
#include "kiln/runtime/common/MemoryPool.h"

#include <gtest/gtest.h>

#include <random>

using namespace kiln;

namespace {
/// A fake device: hands out disjoint address ranges and counts them.
struct FakeDevice {
  uint64_t next = 1ull << 40;
  size_t allocated = 0, released = 0;
  MemoryPool::PageSource source() {
    return {[this](size_t bytes) -> Expected<uint64_t> {
              uint64_t a = next;
              next += (bytes + 4095) / 4096 * 4096;
              ++allocated;
              return a;
            },
            [this](uint64_t) { ++released; }};
  }
};

TEST(MemoryPool, SteadyLoopAllocatesNoNewPagesAfterTheFirstIteration) {
  FakeDevice device;
  MemoryPool pool(device.source());
  const size_t sizes[] = {4096, 1000, 3u << 20, 100u << 20};
  size_t afterFirst = 0;
  for (int iteration = 0; iteration < 100; ++iteration) {
    std::vector<MemoryPool::Allocation> held;
    for (size_t s : sizes)
      held.push_back(*pool.allocate(s));
    for (const auto &a : held)
      pool.free(a);
    if (iteration == 0)
      afterFirst = device.allocated;
  }
  EXPECT_EQ(device.allocated, afterFirst);
  EXPECT_EQ(pool.usage().bytesInUse, 0u);
}

TEST(MemoryPool, ReportsMatchAScriptedSequence) {
  FakeDevice device;
  MemoryPool pool(device.source());
  auto a = *pool.allocate(300);       // 512 B slice
  auto b = *pool.allocate(500);       // same slice size, same page
  auto c = *pool.allocate(40u << 20); // exclusive
  MemoryUsage u = pool.usage();
  EXPECT_EQ(u.numberAllocs, 3u);
  EXPECT_EQ(u.bytesInUse, 300u + 500u + (40u << 20));
  EXPECT_EQ(u.bytesPadding, (512u - 300) + (512u - 500));
  EXPECT_EQ(u.bytesReserved, (1u << 20) + (40u << 20));
  std::vector<PoolReport> reports = pool.reports();
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].name, "sliced 512 B");
  EXPECT_EQ(reports[0].pageSize, 1u << 20);
  EXPECT_EQ(reports[0].pages, 1u);
  EXPECT_EQ(reports[0].pagesPeak, 1u);
  EXPECT_EQ(reports[0].largestAlloc, 500u);
  EXPECT_EQ(reports[1].name, "exclusive");
  EXPECT_EQ(reports[1].pages, 1u);
  EXPECT_EQ(reports[1].largestAlloc, 40u << 20);
  pool.free(a);
  pool.free(b);
  pool.free(c);
  EXPECT_EQ(pool.usage().numberAllocs, 0u);
  EXPECT_EQ(pool.usage().bytesPadding, 0u);
  EXPECT_EQ(device.allocated, 2u);
}

TEST(MemoryPool, CleanupReleasesFreePagesOnly) {
  FakeDevice device;
  MemoryPool pool(device.source());
  auto kept = *pool.allocate(1000);
  auto gone = *pool.allocate(5u << 20);
  auto big = *pool.allocate(64u << 20);
  pool.free(gone);
  pool.free(big);
  pool.cleanup();
  EXPECT_EQ(device.released, 2u); // the 8 MiB slice page and the exclusive page
  EXPECT_EQ(pool.usage().bytesReserved, 1u << 20);
  pool.free(kept);
  pool.cleanup();
  EXPECT_EQ(device.released, 3u);
  EXPECT_EQ(pool.usage().bytesReserved, 0u);
}

TEST(MemoryPool, RandomTrafficStaysWithinTheDocumentedBound) {
  FakeDevice device;
  MemoryPool pool(device.source());
  std::mt19937_64 rng(1);
  std::vector<MemoryPool::Allocation> held;
  size_t peak = 0, worst = 0;
  for (int i = 0; i < 1000000; ++i) {
    bool allocate = held.size() < 64 && (held.empty() || rng() % 2);
    if (allocate) {
      // Mostly small tensors, sometimes large ones.
      size_t bytes = rng() % 16 ? 1 + rng() % (1u << 16) : 1 + rng() % (48u << 20);
      held.push_back(*pool.allocate(bytes));
    } else {
      size_t at = rng() % held.size();
      pool.free(held[at]);
      held[at] = held.back();
      held.pop_back();
    }
    MemoryUsage u = pool.usage();
    peak = std::max(peak, u.bytesInUse);
    if (i % 64 == 0) // the exclusive pages freed so far go back, as documented
      pool.cleanup();
    size_t slicePages = 0;
    for (const PoolReport &r : pool.reports())
      slicePages += r.pageSize;
    worst = std::max(worst, u.bytesReserved);
    ASSERT_LE(u.bytesReserved, 2 * peak + slicePages + (96u << 20))
        << "after " << i << " operations";
  }
  RecordProperty("peak_in_use", std::to_string(peak));
  RecordProperty("max_reserved", std::to_string(worst));
}
} // namespace

TEST(MemoryPool, FreeSaysWhetherTheAddressWasItsOwn) {
  FakeDevice device;
  MemoryPool pool(device.source());
  auto a = pool.allocate(4096);
  ASSERT_TRUE(a);
  EXPECT_FALSE(pool.free({a->address + 1, 0}));
  EXPECT_TRUE(pool.free(*a));
  EXPECT_FALSE(pool.free(*a)); // freed twice
}

// A CPU kernel's output (above 1 MiB) reuses the pages of the last freed
// buffer of its size: already mapped and faulted in, so a run does not pay
// the kernel zeroing fresh pages. Small buffers come from malloc.
TEST(HostBuffers, LargeBuffersAreReusedAfterAFree) {
  // A size no other test frees: the pool's smallest fitting free page is
  // then this test's own.
  const size_t bytes = (70u << 20) + 12345;
  void *first = allocateHostBuffer(bytes);
  static_cast<char *>(first)[bytes - 1] = 1;
  freeHostBuffer(first);
  void *second = allocateHostBuffer(bytes);
  EXPECT_EQ(second, first);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(second) % (2u << 20), 0u); // huge-page aligned
  void *third = allocateHostBuffer(bytes); // the first is live: a new one
  EXPECT_NE(third, second);
  freeHostBuffer(second);
  freeHostBuffer(third);
  // Below 4 MiB too (a 1000^2 f32 matmul's output; malloc would map it
  // afresh): pooled buffers start on a huge page, malloc's do not.
  for (size_t size : {size_t(4000000), (size_t(1) << 20) + 1}) {
    void *pooled = allocateHostBuffer(size);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(pooled) % (2u << 20), 0u) << size;
    freeHostBuffer(pooled);
  }
  void *small = allocateHostBuffer(1000);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small) % 64, 0u);
  freeHostBuffer(small);
}
