//===- CpuJit.cpp - libkiln-cpu-jit.so: CPU kernels in LLVM's ORC JIT ----===//
#include "CpuJit.h"
#include "kiln/BuildId.h"
#include "kiln/runtime/cpu/CpuFeatures.h"

#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

#include <filesystem>
#include <mutex>
#include <unordered_map>

namespace kiln {

namespace {
/// Symbols the process lacks from MLIR's C runner utilities (memrefCopy,
/// ...), loaded at the first lookup that needs them: the library pulls in
/// all of libMLIR, which a process running cached kernels otherwise never
/// loads.
class RunnerUtilsGenerator final : public llvm::orc::DefinitionGenerator {
public:
  explicit RunnerUtilsGenerator(char globalPrefix) : globalPrefix(globalPrefix) {}
  llvm::Error tryToGenerate(llvm::orc::LookupState &state, llvm::orc::LookupKind kind,
                            llvm::orc::JITDylib &lib,
                            llvm::orc::JITDylibLookupFlags flags,
                            const llvm::orc::SymbolLookupSet &symbols) override {
    std::lock_guard lock(mutex);
    if (!library) {
      const char *path = std::filesystem::exists(KILN_RUNNER_UTILS_PATH)
                             ? KILN_RUNNER_UTILS_PATH
                             : KILN_RUNNER_UTILS_SONAME;
      auto loaded = llvm::orc::DynamicLibrarySearchGenerator::Load(path, globalPrefix);
      if (!loaded)
        return loaded.takeError();
      library = std::move(*loaded);
    }
    return library->tryToGenerate(state, kind, lib, flags, symbols);
  }

private:
  char globalPrefix;
  std::mutex mutex;
  std::unique_ptr<llvm::orc::DynamicLibrarySearchGenerator> library;
};

/// The process's JIT and the objects loaded into it, by their bytes.
struct ProcessJit {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::mutex mutex;
  std::unordered_map<std::string, void (*)(void **, const int64_t *)> loaded;
  unsigned nextLibrary = 0;
};

// The JIT'd code is never unmapped: a program's parallel loops run as tasks
// of the process-wide task runtime (AsyncRuntime.cpp), whose workers may
// still be finishing a task's epilogue (reference counting, in JIT'd code)
// after the awaiting caller has resumed; freeing the code then crashed
// those workers at random (seen as SIGSEGV at exit under load). So the JIT
// lives until the process ends: one per process, not one per device, which
// leaked a JIT with every backend destroyed.
Expected<ProcessJit *> processJit() {
  static std::mutex creating;
  static ProcessJit *shared = nullptr;
  std::lock_guard lock(creating);
  if (shared)
    return shared;
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  auto jit = llvm::orc::LLJITBuilder().create();
  if (!jit)
    return makeError(ErrorKind::Unsupported,
                     "cpu: cannot create the JIT: " + llvm::toString(jit.takeError()));
  shared = new ProcessJit{std::move(*jit), {}, {}, 0};
  return shared;
}

Expected<std::string> hostFingerprint() {
  auto jit = processJit();
  if (!jit)
    return std::unexpected(jit.error());
  // The CPU lowering compiles for the host CPU with all its features, but
  // for KILN_CPU_FEATURES.
  llvm::SubtargetFeatures features;
  for (auto &[name, enabled] : llvm::sys::getHostCPUFeatures())
    features.AddFeature(name, enabled);
  const std::string &overrides = cpuFeatureOverrides();
  return "cpu-" + llvm::sys::getProcessTriple() + "-" + llvm::sys::getHostCPUName().str() +
         "+" + std::to_string(std::hash<std::string>{}(features.getString())) +
         (overrides.empty() ? "" : "+" + overrides);
}

size_t loadedObjectCount() {
  auto jit = processJit();
  if (!jit)
    return 0;
  std::lock_guard lock((*jit)->mutex);
  return (*jit)->loaded.size();
}

Expected<void (*)(void **, const int64_t *)> load(std::string_view object) {
  auto shared = processJit();
  if (!shared)
    return std::unexpected(shared.error());
  ProcessJit &process = **shared;
  std::lock_guard lock(process.mutex);
  std::string key(object);
  if (auto it = process.loaded.find(key); it != process.loaded.end())
    return it->second;
  llvm::orc::LLJIT &jit = *process.jit;
  auto &es = jit.getExecutionSession();
  auto lib = es.createJITDylib("kiln" + std::to_string(process.nextLibrary++));
  if (!lib)
    return makeError(ErrorKind::Launch, "cpu: " + llvm::toString(lib.takeError()));
  // libc, libm and the parallel loops' task functions (kiln's task
  // runtime, loaded global by the CPU device) come from the process, the
  // rest from MLIR's runner utilities, loaded when first needed.
  char prefix = jit.getDataLayout().getGlobalPrefix();
  auto fromProcess = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(prefix);
  if (!fromProcess)
    return makeError(ErrorKind::Launch, "cpu: " + llvm::toString(fromProcess.takeError()));
  lib->addGenerator(std::move(*fromProcess));
  lib->addGenerator(std::make_unique<RunnerUtilsGenerator>(prefix));
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(
      llvm::StringRef(object.data(), object.size()), "kiln-kernel.o");
  if (auto err = jit.addObjectFile(*lib, std::move(buffer)))
    return makeError(ErrorKind::Launch,
                     "cpu: cannot load kernel object: " + llvm::toString(std::move(err)));
  auto entry = jit.lookup(*lib, "_kiln_entry");
  if (!entry)
    return makeError(ErrorKind::Launch, "cpu: kernel object has no entry: " +
                                            llvm::toString(entry.takeError()));
  auto function = entry->toPtr<void (*)(void **, const int64_t *)>();
  process.loaded.emplace(std::move(key), function);
  return function;
}

} // namespace
} // namespace kiln

// Returns `const void *`, the type its loader calls it as
// (runtime/common/KilnLibrary.h).
extern "C" __attribute__((visibility("default"))) const void *
kiln_cpu_jit_library() {
  static constexpr kiln::CpuJitApi api{kiln::kBuildId, kiln::hostFingerprint, kiln::load,
                                       kiln::loadedObjectCount};
  return &api;
}
