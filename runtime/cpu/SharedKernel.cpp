//===- SharedKernel.cpp - CPU kernels as shared objects ------------------===//
#include "kiln/runtime/cpu/SharedKernel.h"
#include "kiln/BuildId.h"
#include "kiln/runtime/common/KilnLibrary.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <unordered_map>
#include <vector>

extern char **environ;

namespace kiln {
namespace fs = std::filesystem;

namespace {
/// A directory of its own under the temporary directory, removed with it.
struct ScratchDirectory {
  ScratchDirectory() {
    std::string pattern = (fs::temp_directory_path() / "kiln-link-XXXXXX").string();
    if (mkdtemp(pattern.data()))
      path = pattern;
  }
  ~ScratchDirectory() {
    std::error_code ec;
    if (!path.empty())
      fs::remove_all(path, ec);
  }
  fs::path path;
};

std::optional<std::string> readFile(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// Runs `argv` with stdout and stderr discarded; whether it exited with 0.
bool runQuietly(const std::vector<std::string> &argv) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  std::vector<char *> args;
  for (const std::string &a : argv)
    args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid;
  int spawned = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0)
    return false;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

struct LoadedKernels {
  std::mutex mutex;
  std::unordered_map<std::string, CpuEntryFn> byBinary;
};

LoadedKernels &loadedKernels() {
  static LoadedKernels *kernels = new LoadedKernels; // as the code: never unloaded
  return *kernels;
}

/// Each loaded kernel keeps a descriptor open: allow as many as the system does.
void raiseOpenFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

/// A file descriptor holding `bytes`, for dlopen through /proc/self/fd.
int memoryFile(std::string_view bytes) {
  int fd = memfd_create("kiln-kernel.so", MFD_CLOEXEC);
  if (fd < 0)
    return -1;
  size_t written = 0;
  while (written < bytes.size()) {
    ssize_t n = write(fd, bytes.data() + written, bytes.size() - written);
    if (n <= 0) {
      close(fd);
      return -1;
    }
    written += static_cast<size_t>(n);
  }
  return fd;
}
} // namespace

std::optional<std::string> linkSharedKernel(std::string_view object) {
  const char *setting = std::getenv("KILN_CPU_LINKER");
  std::string linker = setting ? setting : "ld";
  if (linker.empty())
    return std::nullopt;
  ScratchDirectory scratch;
  if (scratch.path.empty())
    return std::nullopt;
  fs::path input = scratch.path / "kernel.o", output = scratch.path / "kernel.so",
           exports = scratch.path / "exports.map";
  {
    std::ofstream out(input, std::ios::binary);
    out.write(object.data(), static_cast<std::streamsize>(object.size()));
    // Only the entry is exported: the kernel's other functions (`main`,
    // `parallel_compute_fn`, ... in every kernel) are bound inside it, never
    // to a namesake in the process.
    std::ofstream(exports) << "{ global: _kiln_entry; local: *; };\n";
    if (!out)
      return std::nullopt;
  }
  // Undefined symbols (libc, the task runtime) bind when it is loaded.
  bool ran =
      runQuietly({linker, "-shared", "--build-id=none", "-z", "noexecstack", "--version-script",
                  exports.string(), "-o", output.string(), input.string()});
  auto linked = ran ? readFile(output) : std::nullopt;
  if (!linked || !isSharedKernel(*linked)) {
    // The system's ld may be absent (no binutils); a linker the user named
    // that fails is worth saying, once.
    static std::once_flag warned;
    if (setting)
      std::call_once(warned, [&] {
        std::fprintf(stderr,
                     "kiln: KILN_CPU_LINKER=%s did not link a CPU kernel; CPU kernels are "
                     "loaded by the JIT instead\n",
                     setting);
      });
    return std::nullopt;
  }
  return linked;
}

bool isSharedKernel(std::string_view binary) {
  Elf64_Ehdr header;
  if (binary.size() < sizeof header)
    return false;
  std::memcpy(&header, binary.data(), sizeof header);
  return std::memcmp(header.e_ident, ELFMAG, SELFMAG) == 0 && header.e_type == ET_DYN;
}

size_t sharedKernelCount() {
  LoadedKernels &kernels = loadedKernels();
  std::lock_guard lock(kernels.mutex);
  return kernels.byBinary.size();
}

Expected<void> loadCpuKernelRuntime() {
  static const Expected<void> loaded = []() -> Expected<void> {
    KilnLibrary library{"CPU kernel runtime", "libkiln-cpu-runtime.so", "kiln_cpu_runtime_library",
                        "KILN_CPU_RUNTIME_LIBRARY", KILN_CPU_RUNTIME_BUILD_PATH};
    library.global = true;
    auto table = loadKilnLibrary(library, kBuildId);
    if (!table)
      return std::unexpected(table.error());
    return {};
  }();
  return loaded;
}

Expected<CpuEntryFn> loadSharedKernel(std::string_view binary) {
  if (auto runtime = loadCpuKernelRuntime(); !runtime)
    return std::unexpected(runtime.error());
  LoadedKernels &kernels = loadedKernels();
  std::lock_guard lock(kernels.mutex);
  std::string key(binary);
  if (auto it = kernels.byBinary.find(key); it != kernels.byBinary.end())
    return it->second;
  if (kernels.byBinary.empty())
    raiseOpenFileLimit();
  int fd = memoryFile(binary);
  if (fd < 0)
    return makeError(ErrorKind::Launch, std::string("cpu: cannot hold a kernel in memory: ") +
                                            std::strerror(errno));
  // Neither unloaded (the code may run on task workers until the process
  // ends) nor closed: the loader knows a library by its path, and a closed
  // descriptor's number, reused, would name the next kernel as this one.
  void *handle = dlopen(("/proc/self/fd/" + std::to_string(fd)).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    return makeError(ErrorKind::Launch, std::string("cpu: cannot load kernel: ") + dlerror());
  auto entry = reinterpret_cast<CpuEntryFn>(dlsym(handle, "_kiln_entry"));
  if (!entry)
    return makeError(ErrorKind::Launch, "cpu: kernel has no entry _kiln_entry");
  kernels.byBinary.emplace(std::move(key), entry);
  return entry;
}

} // namespace kiln
