//===- MemoryPool.h - device memory pools: sliced pages and exclusive pages -*- C++ -*-===//
//
// Device allocations are slow (cuMemAlloc synchronises); a pool keeps the
// pages it got and hands out pieces of them. Requests up to the largest
// slice size go to a sliced pool: the ladder of slice sizes (powers of
// two from 256 B) each carve pages into equal slices. Larger requests get
// an exclusive page each, kept for reuse by a request that fits it. Pages
// go back to the device only on `cleanup`. Reports follow the seed:
// per pool {page_size, pages, pages_peak, largest_alloc}, and usage
// {number_allocs, bytes_in_use, bytes_padding, bytes_reserved}.
//
// Bound (tests/unit/MemoryPoolTest.cpp, 1e6 random allocations and frees
// with a cleanup every 64): bytes reserved <= 2 x the peak bytes in use +
// one page per slice size + 2 x the largest request. A slice or reused
// exclusive page is at most twice its request; each slice size holds at
// most one page its peak did not need; exclusive pages freed since the
// last cleanup wait there for reuse.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_COMMON_MEMORYPOOL_H
#define KILN_RUNTIME_COMMON_MEMORYPOOL_H

#include "kiln/runtime/common/Error.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace kiln {

struct PoolReport {
  std::string name; // "sliced 256 B", ..., "exclusive"
  size_t pageSize = 0; // 0 for the exclusive pool: pages differ
  size_t pages = 0, pagesPeak = 0, largestAlloc = 0;
};

struct MemoryUsage {
  size_t numberAllocs = 0, bytesInUse = 0, bytesPadding = 0, bytesReserved = 0;
};

class MemoryPool {
public:
  /// Where pages come from and go back to (cuMemAlloc/cuMemFree, ...).
  struct PageSource {
    std::function<Expected<uint64_t>(size_t bytes)> allocate;
    std::function<void(uint64_t address)> release;
  };
  struct Allocation {
    uint64_t address = 0;
    size_t bytes = 0;
  };

  static constexpr size_t kSmallestSlice = 256;
  static constexpr size_t kLargestSlice = 32ull << 20;
  /// A slice size's pages: 1 MiB, or two slices when those are larger.
  static size_t pageBytesFor(size_t sliceBytes) {
    return std::max<size_t>(1ull << 20, 2 * sliceBytes);
  }

  explicit MemoryPool(PageSource source) : source(std::move(source)) {}
  ~MemoryPool();
  MemoryPool(const MemoryPool &) = delete;
  MemoryPool &operator=(const MemoryPool &) = delete;

  Expected<Allocation> allocate(size_t bytes);
  /// False when the address is not a live allocation of this pool.
  bool free(const Allocation &allocation);
  /// Returns every page without a live allocation to the page source.
  void cleanup();

  std::vector<PoolReport> reports() const;
  MemoryUsage usage() const;
  /// How many pages the source has handed out so far (for tests).
  size_t pageAllocations() const { return sourced; }

private:
  struct Page {
    uint64_t address;
    size_t bytes;
    std::vector<uint64_t> freeSlices; // sliced pages only
    size_t live = 0;
  };
  struct SlicedPool {
    size_t sliceBytes;
    std::vector<Page> pages;
    size_t pagesPeak = 0, largestAlloc = 0;
  };
  struct Live {
    size_t requested;
    int pool; // slice pool index, -1: exclusive
  };

  Expected<Page> newPage(size_t bytes);
  int poolFor(size_t bytes) const;

  PageSource source;
  std::vector<SlicedPool> sliced;
  std::multimap<size_t, Page> exclusiveFree; // by size, for reuse
  std::map<uint64_t, size_t> exclusiveLive;  // address -> page bytes
  size_t exclusivePeak = 0, exclusiveLargest = 0;
  std::map<uint64_t, Live> live;
  size_t bytesInUse = 0, bytesPadding = 0, sourced = 0;
};

} // namespace kiln

#endif
