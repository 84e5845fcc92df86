//===- KernelTemporaries.cpp - buffers CPU kernels allocate as they run ---===//
//
// A CPU kernel's temporaries (its memref.alloc: softmax's exponentials, a
// matmul's packed panels) come from `_mlir_memref_to_llvm_alloc` / `_free`
// (FinalizeMemRefToLLVM with generic allocation functions). With malloc,
// glibc maps every large block afresh and unmaps it on free, so each run
// paid a page fault (and the kernel zeroing the page) per 4 KiB: 150 ms of
// a 4096^2 softmax's 160 ms here, and a quarter of a 3x3 convolution's
// time in its sub-MiB layout copies. Blocks from 64 KiB on are kept mapped
// when freed (on huge pages from 2 MiB on) for the next block of a similar
// size, up to 1 GiB of them (as the host output pool does,
// common/HostTensor.cpp). (From 64 KiB: glibc's malloc maps blocks from 128
// KiB on, and a column chain's slab of 64-256 KiB, allocated for every slab
// by kiln-cpu-row-kernels, spent 12% of a softmax over dim 0 zeroing pages.)
//
//===----------------------------------------------------------------------===//
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <sys/mman.h>
#include <unordered_map>

namespace {
constexpr size_t kHugePage = size_t(2) << 20;
constexpr size_t kKeptFrom = size_t(64) << 10;
/// Kept blocks are whole granules, so that sizes a little apart share them.
constexpr size_t kGranule = size_t(64) << 10;
constexpr size_t kKeepAtMost = size_t(1) << 30;

struct Blocks {
  std::mutex mutex;
  std::unordered_map<void *, size_t> live; // block -> its bytes
  std::multimap<size_t, void *> kept;      // bytes -> a freed block
  size_t keptBytes = 0;
};

/// Never destroyed: a kernel running in a static's destructor may still free.
Blocks &blocks() {
  static auto *all = new Blocks;
  return *all;
}
} // namespace

#define KILN_KERNEL_EXPORT extern "C" __attribute__((visibility("default")))

KILN_KERNEL_EXPORT void *_mlir_memref_to_llvm_alloc(size_t bytes) {
  if (bytes < kKeptFrom)
    return std::malloc(bytes);
  size_t granule = bytes >= kHugePage ? kHugePage : kGranule;
  size_t rounded = (bytes + granule - 1) / granule * granule;
  Blocks &b = blocks();
  std::lock_guard lock(b.mutex);
  // The smallest kept block that fits without wasting more than the request.
  if (auto it = b.kept.lower_bound(rounded); it != b.kept.end() && it->first <= 2 * rounded) {
    void *block = it->second;
    b.live.emplace(block, it->first);
    b.keptBytes -= it->first;
    b.kept.erase(it);
    return block;
  }
  void *block = std::aligned_alloc(granule, rounded);
  if (!block)
    return nullptr;
  if (granule == kHugePage)
    madvise(block, rounded, MADV_HUGEPAGE); // a hint: failure only costs speed
  b.live.emplace(block, rounded);
  return block;
}

KILN_KERNEL_EXPORT void _mlir_memref_to_llvm_free(void *block) {
  // Kept blocks start on a granule; the others are not worth the lock.
  if (reinterpret_cast<uintptr_t>(block) % kGranule == 0 && block) {
    Blocks &b = blocks();
    std::lock_guard lock(b.mutex);
    if (auto it = b.live.find(block); it != b.live.end()) {
      size_t bytes = it->second;
      b.live.erase(it);
      if (b.keptBytes + bytes <= kKeepAtMost) {
        b.kept.emplace(bytes, block);
        b.keptBytes += bytes;
        return;
      }
    }
  }
  std::free(block);
}
