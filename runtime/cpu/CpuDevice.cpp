//===- CpuDevice.cpp - running native kernels on the host ----------------===//
//
// Kernels come as shared objects (SharedKernel.h), loaded with no LLVM, or
// as relocatable objects, loaded by the CPU device's LLVM half,
// libkiln-cpu-jit.so (CpuJit.h), which is then loaded on first use. The
// host fingerprint is LLVM's too; it is remembered on disk by what
// /proc/cpuinfo says of the CPU, so a warm start loads no LLVM at all.
//
//===----------------------------------------------------------------------===//
#include "kiln/runtime/cpu/CpuDevice.h"
#include "kiln/runtime/cpu/CpuFeatures.h"
#include "CpuJit.h"
#include "kiln/runtime/cpu/SharedKernel.h"
#include "kiln/BuildId.h"
#include "kiln/runtime/common/DiskCache.h"
#include "kiln/runtime/common/KilnLibrary.h"

#include <atomic>
#include <cstdio>
#include <fstream>
#include <sys/utsname.h>
#include <unistd.h>

namespace kiln {
namespace fs = std::filesystem;

namespace {
std::atomic<bool> jitLoaded = false;

Expected<const CpuJitApi *> cpuJit() {
  static const Expected<const CpuJitApi *> api = []() -> Expected<const CpuJitApi *> {
    jitLoaded = true;
    auto table = loadKilnLibrary({"CPU JIT", kCpuJitLibraryFile, kCpuJitLibrarySymbol,
                                  "KILN_CPU_JIT_LIBRARY", KILN_CPU_JIT_BUILD_PATH},
                                 kBuildId);
    if (!table)
      return std::unexpected(table.error());
    return static_cast<const CpuJitApi *>(*table);
  }();
  return api;
}

/// What LLVM's host detection reads, as /proc/cpuinfo shows it for the
/// first CPU (vendor, family, model, stepping, feature flags), with the
/// machine, kiln's build and KILN_CPU_FEATURES; empty where /proc/cpuinfo
/// cannot be read.
std::string hostIdentity() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string identity, line;
  static constexpr const char *kKeys[] = {
      "vendor_id", "cpu family", "model", "model name", "stepping", "flags", // x86
      "CPU implementer", "CPU architecture", "CPU variant", "CPU part", "CPU revision",
      "Features"}; // arm
  while (std::getline(cpuinfo, line) && !line.empty()) {
    std::string key = line.substr(0, line.find(':'));
    key.erase(key.find_last_not_of(" \t") + 1);
    for (const char *k : kKeys)
      if (key == k)
        identity += line + "\n";
  }
  if (identity.empty())
    return {};
  utsname names{};
  uname(&names);
  return identity + names.machine + "\n" + kBuildId + "\n" + cpuFeatureOverrides();
}

/// Where the fingerprint of a host with `identity` is remembered, if anywhere.
std::optional<fs::path> fingerprintFile(const std::string &identity) {
  auto config = DiskCacheConfig::fromEnvironment();
  if (identity.empty() || !config || config->root.empty())
    return std::nullopt;
  uint64_t hash = 1469598103934665603ull; // FNV-1a
  for (unsigned char c : identity)
    hash = (hash ^ c) * 1099511628211ull;
  char name[17];
  std::snprintf(name, sizeof name, "%016llx", static_cast<unsigned long long>(hash));
  return config->root / "cpu-hosts" / name;
}

Expected<std::string> hostFingerprint() {
  auto file = fingerprintFile(hostIdentity());
  if (file) {
    std::ifstream in(*file);
    std::string remembered;
    // Anything but one fingerprint line is not trusted: computed again.
    if (std::getline(in, remembered) && remembered.starts_with("cpu-") &&
        remembered.size() < 512 && in.peek() == std::char_traits<char>::eof())
      return remembered;
  }
  auto jit = cpuJit();
  if (!jit)
    return std::unexpected(jit.error());
  auto fingerprint = (*jit)->hostFingerprint();
  if (!fingerprint || !file)
    return fingerprint;
  // Published by a rename; a read-only cache directory just keeps nothing.
  std::error_code ec;
  fs::create_directories(file->parent_path(), ec);
  fs::path temp = file->string() + ".tmp" + std::to_string(getpid());
  {
    std::ofstream out(temp);
    out << *fingerprint << "\n";
  }
  fs::rename(temp, *file, ec);
  if (ec)
    fs::remove(temp, ec);
  return fingerprint;
}
} // namespace

Expected<std::unique_ptr<CpuDevice>> CpuDevice::create() {
  // Kernels of either kind run their parallel loops on kiln's task runtime.
  if (auto runtime = loadCpuKernelRuntime(); !runtime)
    return std::unexpected(runtime.error());
  auto fingerprint = hostFingerprint();
  if (!fingerprint)
    return std::unexpected(fingerprint.error());
  return std::unique_ptr<CpuDevice>(new CpuDevice(std::move(*fingerprint)));
}

size_t CpuDevice::loadedObjectCount() {
  // Counting the JIT's objects must not load it.
  size_t jitObjects = jitLoaded && cpuJit() ? (*cpuJit())->loadedObjectCount() : 0;
  return sharedKernelCount() + jitObjects;
}

bool CpuDevice::jitLibraryLoaded() { return jitLoaded; }

Expected<std::shared_ptr<CpuExecutable>> CpuDevice::load(std::string_view binary) {
  Expected<CpuEntryFn> entry = [&]() -> Expected<CpuEntryFn> {
    if (isSharedKernel(binary))
      return loadSharedKernel(binary);
    auto jit = cpuJit();
    if (!jit)
      return std::unexpected(jit.error());
    return (*jit)->load(binary);
  }();
  if (!entry)
    return std::unexpected(entry.error());
  return std::make_shared<CpuExecutable>(*entry);
}

} // namespace kiln
