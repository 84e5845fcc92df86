//===- CompilerLibrary.cpp - the entry point of libkiln-compiler.so ------===//
#include "kiln/Lowering/CompilerLibrary.h"
#include "kiln/BuildId.h"

extern "C" __attribute__((visibility("default"))) const kiln::CompilerLibraryApi *
kiln_compiler_library() {
  static constexpr kiln::CompilerLibraryApi api{kiln::kBuildId, kiln::createCompiler,
                                                kiln::checkTypedOp};
  return &api;
}
