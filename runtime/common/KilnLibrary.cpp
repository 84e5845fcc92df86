//===- KilnLibrary.cpp - kiln's own libraries, loaded at first use --------===//
#include "kiln/runtime/common/KilnLibrary.h"

#include <cstdlib>
#include <dlfcn.h>
#include <filesystem>
#include <vector>

namespace kiln {
namespace {

std::vector<std::string> candidatePaths(const KilnLibrary &library) {
  // A path named explicitly is the only one: loading another build's
  // library in its place would run code the user did not choose (an A/B
  // of two builds' compilers measured the same one twice).
  if (const char *path = std::getenv(library.pathVariable); path && *path)
    return {path};
  std::vector<std::string> paths;
  Dl_info self{};
  if (dladdr(reinterpret_cast<void *>(&loadKilnLibrary), &self) && self.dli_fname) {
    std::filesystem::path dir = std::filesystem::path(self.dli_fname).parent_path();
    paths.push_back((dir / library.file).string());
    paths.push_back((dir / ".." / "lib" / library.file).string());
  }
  paths.push_back(library.buildPath);
  paths.push_back(library.file);
  return paths;
}

} // namespace

Expected<const void *> loadKilnLibrary(const KilnLibrary &library, std::string_view buildId) {
  std::string tried;
  for (const std::string &path : candidatePaths(library)) {
    // A path that does not exist is not worth dlopen's message.
    if (path.find('/') != std::string::npos && !std::filesystem::exists(path)) {
      tried += "\n  " + path + ": does not exist";
      continue;
    }
    void *handle = dlopen(path.c_str(), RTLD_NOW | (library.global ? RTLD_GLOBAL : RTLD_LOCAL));
    if (!handle) {
      tried += "\n  " + std::string(dlerror());
      continue;
    }
    using Entry = const void *(*)();
    auto entry = reinterpret_cast<Entry>(dlsym(handle, library.symbol));
    if (!entry) {
      tried += "\n  " + path + ": no symbol " + library.symbol;
      continue;
    }
    const void *table = entry();
    // Every table starts with the build id (KilnLibrary.h).
    std::string_view id = *static_cast<const char *const *>(table);
    if (id != buildId) {
      tried += "\n  " + path + ": from another kiln build (" + std::string(id) +
               ", this one is " + std::string(buildId) + ")";
      continue;
    }
    return table;
  }
  return makeError(ErrorKind::Unsupported,
                   std::string("kiln's ") + library.what + " library " + library.file +
                       " could not be loaded (set " + library.pathVariable +
                       " to its path); tried:" +
                       (tried.empty() ? std::string(" nothing found") : tried));
}

} // namespace kiln
