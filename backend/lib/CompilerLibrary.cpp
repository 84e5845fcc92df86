//===- CompilerLibrary.cpp - load libkiln-compiler.so at first use -------===//
#include "kiln/backend/CompilerLibrary.h"
#include "kiln/BuildId.h"

#include <atomic>
#include <cstdlib>
#include <dlfcn.h>
#include <filesystem>
#include <mutex>

namespace kiln {
namespace {

std::atomic<bool> loaded = false;

/// Where the library may be, in the order tried.
std::vector<std::string> candidatePaths() {
  std::vector<std::string> paths;
  if (const char *path = std::getenv("KILN_COMPILER_LIBRARY"); path && *path)
    paths.push_back(path);
  Dl_info self{};
  if (dladdr(reinterpret_cast<void *>(&compilerLibrary), &self) && self.dli_fname) {
    std::filesystem::path dir = std::filesystem::path(self.dli_fname).parent_path();
    paths.push_back((dir / kCompilerLibraryFile).string());
    paths.push_back((dir / ".." / "lib" / kCompilerLibraryFile).string());
  }
#ifdef KILN_COMPILER_BUILD_PATH
  paths.push_back(KILN_COMPILER_BUILD_PATH);
#endif
  paths.push_back(kCompilerLibraryFile);
  return paths;
}

Expected<const CompilerLibraryApi *> load() {
  std::string tried;
  for (const std::string &path : candidatePaths()) {
    // A path with a slash that does not exist is not worth dlopen's message.
    if (path.find('/') != std::string::npos && !std::filesystem::exists(path))
      continue;
    void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      tried += "\n  " + std::string(dlerror());
      continue;
    }
    using Entry = const CompilerLibraryApi *(*)();
    auto entry = reinterpret_cast<Entry>(dlsym(handle, kCompilerLibrarySymbol));
    if (!entry) {
      tried += "\n  " + path + ": no symbol " + kCompilerLibrarySymbol;
      continue;
    }
    const CompilerLibraryApi *api = entry();
    if (std::string_view(api->buildId) != kBuildId) {
      tried += "\n  " + path + ": from another kiln build (" + api->buildId +
               ", this one is " + kBuildId + ")";
      continue;
    }
    loaded = true;
    return api;
  }
  return makeError(ErrorKind::Unsupported,
                   std::string("kiln's compiler library ") + kCompilerLibraryFile +
                       " could not be loaded, so this process cannot compile "
                       "(set KILN_COMPILER_LIBRARY to its path); tried:" +
                       (tried.empty() ? std::string(" nothing found") : tried));
}

} // namespace

Expected<const CompilerLibraryApi *> compilerLibrary() {
  static Expected<const CompilerLibraryApi *> api = load();
  return api;
}

Expected<std::unique_ptr<Compiler>> loadCompiler() {
  auto api = compilerLibrary();
  if (!api)
    return std::unexpected(api.error());
  return (*api)->createCompiler();
}

bool compilerLibraryLoaded() { return loaded; }

} // namespace kiln
