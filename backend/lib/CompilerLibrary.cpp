//===- CompilerLibrary.cpp - load libkiln-compiler.so at first use -------===//
#include "kiln/backend/CompilerLibrary.h"
#include "kiln/BuildId.h"
#include "kiln/runtime/common/KilnLibrary.h"

#include <atomic>

namespace kiln {
namespace {
std::atomic<bool> loaded = false;
} // namespace

Expected<const CompilerLibraryApi *> compilerLibrary() {
  static const Expected<const CompilerLibraryApi *> api =
      []() -> Expected<const CompilerLibraryApi *> {
    auto table = loadKilnLibrary({"compiler", kCompilerLibraryFile, kCompilerLibrarySymbol,
                                  "KILN_COMPILER_LIBRARY", KILN_COMPILER_BUILD_PATH},
                                 kBuildId);
    if (!table)
      return std::unexpected(table.error());
    loaded = true;
    return static_cast<const CompilerLibraryApi *>(*table);
  }();
  return api;
}

Expected<std::unique_ptr<Compiler>> loadCompiler() {
  auto api = compilerLibrary();
  if (!api)
    return std::unexpected(api.error());
  return (*api)->createCompiler();
}

bool compilerLibraryLoaded() { return loaded; }

void finishCompilerLibrary() {
  if (loaded)
    (*compilerLibrary())->finishProcess();
}

} // namespace kiln
