//===- KilnLibrary.h - kiln's own libraries, loaded at first use -*- C++ -*-===//
//
// What a process may never need lives in a shared library of kiln's own,
// loaded at first use: the compiler (libkiln-compiler.so, with MLIR) and
// the CPU JIT (libkiln-cpu-jit.so, with LLVM). A process served by the
// disk cache loads no MLIR, and one that uses no CPU device no LLVM.
// Each library exports one C function, `const void *NAME()`, that returns
// its table, whose first member is the kiln build id it was built with.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_COMMON_KILNLIBRARY_H
#define KILN_RUNTIME_COMMON_KILNLIBRARY_H

#include "kiln/runtime/common/Error.h"

#include <string_view>

namespace kiln {

struct KilnLibrary {
  const char *what;         // "compiler", for messages
  const char *file;         // "libkiln-compiler.so"
  const char *symbol;       // the C function returning the table
  const char *pathVariable; // names the library's path explicitly
  const char *buildPath;    // where the build tree put it
  bool global = false;      // its symbols bind later libraries' (RTLD_GLOBAL)
};

/// The library's table, from `$pathVariable` where it is set (that path
/// alone), else the first of: the folder of the binary that holds this
/// loader, and its `../lib`; `buildPath`; the dynamic loader's search path.
/// Unsupported, saying every place tried and why each failed, when none
/// loads or the one found is from another build than `buildId`.
/// Call once per library (the callers keep the result).
Expected<const void *> loadKilnLibrary(const KilnLibrary &library, std::string_view buildId);

} // namespace kiln

#endif
