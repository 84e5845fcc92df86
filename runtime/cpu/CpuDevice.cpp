//===- CpuDevice.cpp - running native kernels on the host ----------------===//
//
// The loader of the CPU device's LLVM half, libkiln-cpu-jit.so (CpuJit.h),
// which the first CPU device loads.
//
//===----------------------------------------------------------------------===//
#include "kiln/runtime/cpu/CpuDevice.h"
#include "CpuJit.h"
#include "kiln/BuildId.h"
#include "kiln/runtime/common/KilnLibrary.h"

namespace kiln {
namespace {
Expected<const CpuJitApi *> cpuJit() {
  static const Expected<const CpuJitApi *> api = []() -> Expected<const CpuJitApi *> {
    auto table = loadKilnLibrary({"CPU JIT", kCpuJitLibraryFile, kCpuJitLibrarySymbol,
                                  "KILN_CPU_JIT_LIBRARY", KILN_CPU_JIT_BUILD_PATH},
                                 kBuildId);
    if (!table)
      return std::unexpected(table.error());
    return static_cast<const CpuJitApi *>(*table);
  }();
  return api;
}
} // namespace

Expected<std::unique_ptr<CpuDevice>> CpuDevice::create() {
  auto jit = cpuJit();
  if (!jit)
    return std::unexpected(jit.error());
  // Made once per device (the host's name comes from /proc/cpuinfo).
  auto fingerprint = (*jit)->hostFingerprint();
  if (!fingerprint)
    return std::unexpected(fingerprint.error());
  return std::unique_ptr<CpuDevice>(new CpuDevice(std::move(*fingerprint)));
}

size_t CpuDevice::loadedObjectCount() {
  auto jit = cpuJit();
  return jit ? (*jit)->loadedObjectCount() : 0;
}

Expected<std::shared_ptr<CpuExecutable>> CpuDevice::load(std::string_view object) {
  auto jit = cpuJit();
  if (!jit)
    return std::unexpected(jit.error());
  auto entry = (*jit)->load(object);
  if (!entry)
    return std::unexpected(entry.error());
  return std::make_shared<CpuExecutable>(*entry);
}

} // namespace kiln
