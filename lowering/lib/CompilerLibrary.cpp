//===- CompilerLibrary.cpp - the entry point of libkiln-compiler.so ------===//
#include "kiln/Lowering/CompilerLibrary.h"
#include "Dumps.h"
#include "kiln/BuildId.h"

// Returns `const void *`, the type its loader calls it as
// (runtime/common/KilnLibrary.h).
extern "C" __attribute__((visibility("default"))) const void *
kiln_compiler_library() {
  static constexpr kiln::CompilerLibraryApi api{kiln::kBuildId, kiln::createCompiler,
                                                kiln::checkTypedOp,
                                                kiln::reportUnusedOverrideFolders};
  return &api;
}
