//===- MemoryPool.cpp - device memory pools ------------------------------===//
#include "kiln/runtime/common/MemoryPool.h"

#include <bit>

namespace kiln {

namespace {
constexpr size_t kAlignment = MemoryPool::kSmallestSlice;
size_t alignUp(size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }
std::string humanBytes(size_t b) {
  return b >= (1u << 20) ? std::to_string(b >> 20) + " MiB"
         : b >= 1024     ? std::to_string(b >> 10) + " KiB"
                         : std::to_string(b) + " B";
}
} // namespace

MemoryPool::~MemoryPool() {
  for (SlicedPool &pool : sliced)
    for (Page &page : pool.pages)
      source.release(page.address);
  for (auto &[bytes, page] : exclusiveFree)
    source.release(page.address);
  for (auto &[address, bytes] : exclusiveLive)
    source.release(address);
}

int MemoryPool::poolFor(size_t bytes) const {
  if (bytes > kLargestSlice)
    return -1;
  size_t slice = std::bit_ceil(std::max(bytes, kSmallestSlice));
  return std::countr_zero(slice) - std::countr_zero(kSmallestSlice);
}

Expected<MemoryPool::Page> MemoryPool::newPage(size_t bytes) {
  auto address = source.allocate(bytes);
  if (!address)
    return std::unexpected(address.error());
  ++sourced;
  return Page{*address, bytes, {}, 0};
}

Expected<MemoryPool::Allocation> MemoryPool::allocate(size_t bytes) {
  int index = poolFor(bytes);
  uint64_t address = 0;
  size_t granted = 0;
  if (index >= 0) {
    if (sliced.size() <= size_t(index))
      for (size_t i = sliced.size(); i <= size_t(index); ++i)
        sliced.push_back({kSmallestSlice << i, {}, 0, 0});
    SlicedPool &pool = sliced[index];
    granted = pool.sliceBytes;
    Page *page = nullptr;
    for (Page &p : pool.pages)
      if (!p.freeSlices.empty()) {
        page = &p;
        break;
      }
    if (!page) {
      auto fresh = newPage(pageBytesFor(pool.sliceBytes));
      if (!fresh)
        return std::unexpected(fresh.error());
      for (size_t at = fresh->bytes; at >= pool.sliceBytes; at -= pool.sliceBytes)
        fresh->freeSlices.push_back(fresh->address + at - pool.sliceBytes);
      pool.pages.push_back(std::move(*fresh));
      pool.pagesPeak = std::max(pool.pagesPeak, pool.pages.size());
      page = &pool.pages.back();
    }
    address = page->freeSlices.back();
    page->freeSlices.pop_back();
    ++page->live;
    pool.largestAlloc = std::max(pool.largestAlloc, bytes);
  } else {
    // An exclusive page: the smallest free one that fits without wasting
    // more than the request, else a new one.
    size_t want = alignUp(bytes);
    auto it = exclusiveFree.lower_bound(want);
    Page page;
    if (it != exclusiveFree.end() && it->first <= 2 * want) {
      page = it->second;
      exclusiveFree.erase(it);
    } else {
      auto fresh = newPage(want);
      if (!fresh)
        return std::unexpected(fresh.error());
      page = *fresh;
    }
    address = page.address;
    granted = page.bytes;
    exclusiveLive[address] = page.bytes;
    exclusivePeak = std::max(exclusivePeak, exclusiveLive.size() + exclusiveFree.size());
    exclusiveLargest = std::max(exclusiveLargest, bytes);
  }
  live[address] = {bytes, index};
  bytesInUse += bytes;
  bytesPadding += granted - bytes;
  return Allocation{address, bytes};
}

bool MemoryPool::free(const Allocation &allocation) {
  auto it = live.find(allocation.address);
  if (it == live.end())
    return false; // not ours, or freed twice: nothing to give back
  Live entry = it->second;
  live.erase(it);
  bytesInUse -= entry.requested;
  if (entry.pool < 0) {
    size_t pageBytes = exclusiveLive[allocation.address];
    exclusiveLive.erase(allocation.address);
    bytesPadding -= pageBytes - entry.requested;
    exclusiveFree.emplace(pageBytes, Page{allocation.address, pageBytes, {}, 0});
    return true;
  }
  SlicedPool &pool = sliced[entry.pool];
  bytesPadding -= pool.sliceBytes - entry.requested;
  for (Page &page : pool.pages)
    if (allocation.address >= page.address &&
        allocation.address < page.address + page.bytes) {
      page.freeSlices.push_back(allocation.address);
      --page.live;
      return true;
    }
  return true;
}

void MemoryPool::cleanup() {
  for (SlicedPool &pool : sliced)
    std::erase_if(pool.pages, [&](const Page &page) {
      if (page.live > 0)
        return false;
      source.release(page.address);
      return true;
    });
  for (auto &[bytes, page] : exclusiveFree)
    source.release(page.address);
  exclusiveFree.clear();
}

std::vector<PoolReport> MemoryPool::reports() const {
  std::vector<PoolReport> out;
  for (const SlicedPool &pool : sliced)
    if (pool.pagesPeak > 0)
      out.push_back({"sliced " + humanBytes(pool.sliceBytes),
                     pageBytesFor(pool.sliceBytes), pool.pages.size(),
                     pool.pagesPeak, pool.largestAlloc});
  out.push_back({"exclusive", 0, exclusiveLive.size() + exclusiveFree.size(),
                 exclusivePeak, exclusiveLargest});
  return out;
}

MemoryUsage MemoryPool::usage() const {
  size_t reserved = 0;
  for (const SlicedPool &pool : sliced)
    reserved += pool.pages.size() * pageBytesFor(pool.sliceBytes);
  for (auto &[address, bytes] : exclusiveLive)
    reserved += bytes;
  for (auto &[bytes, page] : exclusiveFree)
    reserved += bytes;
  return {live.size(), bytesInUse, bytesPadding, reserved};
}

} // namespace kiln
