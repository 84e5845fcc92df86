//===- fuzz-cache-entry.cpp - libFuzzer target: disk cache entries --------===//
//
// Any bytes are an entry file: decodeCacheEntry returns an entry whose
// re-encoding is the same bytes, or an error with a message; a decoded
// entry's program (for each target kind; the bytes themselves as metadata
// when they are no entry) decodes with its indices in range, or is refused
// with a message. Never a crash.
//
//===----------------------------------------------------------------------===//
#include "CachedProgram.h"

#include <cstdio>
#include <cstdlib>

namespace {
void checkProgram(const kiln::CacheEntry &entry) {
  for (const char *kind : {"cpu", "cuda", "vulkan"}) {
    auto program = kiln::decodeCachedProgram(kind, entry);
    if (!program) {
      if (program.error().message.empty())
        std::abort();
      continue;
    }
    const kiln::GpuPlan &plan = program->plan;
    for (const kiln::KernelLaunch &launch : plan.launches) {
      if (launch.module < 0 || static_cast<size_t>(launch.module) >= plan.modules.size())
        std::abort();
      for (const kiln::KernelArgument &a : launch.arguments) {
        const kiln::BufferView *view = std::get_if<kiln::BufferView>(&a);
        if (auto *map = std::get_if<kiln::TensorMapArgument>(&a))
          view = &map->view;
        if (view && (view->buffer < 0 || static_cast<size_t>(view->buffer) >= plan.bufferBytes.size()))
          std::abort();
      }
    }
  }
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char *>(data), size);
  auto entry = kiln::decodeCacheEntry(bytes);
  if (!entry) {
    if (entry.error().message.empty())
      std::abort(); // every refusal says why
    // Mutations rarely keep a digest right: the metadata decoder behind it
    // gets the bytes as metadata too.
    checkProgram({"", std::string(bytes), {"module", "pipeline cache"}});
    return 0;
  }
  if (kiln::encodeCacheEntry(*entry) != bytes)
    std::abort(); // decoding lost or invented something
  checkProgram(*entry);
  return 0;
}
