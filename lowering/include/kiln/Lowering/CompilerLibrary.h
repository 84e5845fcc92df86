//===- CompilerLibrary.h - what libkiln-compiler.so exports -----*- C++ -*-===//
//
// The compiler (the kiln dialect, lowering and all of MLIR) is a shared
// library of its own, libkiln-compiler.so, that the backend loads at its
// first compile (kiln/backend/CompilerLibrary.h): a process whose kernels
// all come from the disk cache never loads it. This is the one table it
// hands its loader. Plain C++: no MLIR header.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LOWERING_COMPILERLIBRARY_H
#define KILN_LOWERING_COMPILERLIBRARY_H

#include "kiln/Dialect/TypedOps.h"
#include "kiln/Lowering/Compiler.h"

namespace kiln {

struct CompilerLibraryApi {
  /// The kiln build the library is from (kiln/BuildId.h): a loader from
  /// another build refuses it, as the C++ types it shares may differ.
  const char *buildId;
  std::unique_ptr<Compiler> (*createCompiler)();
  /// The dialect's checks for the backend's typed ops (TypedOps.h).
  std::expected<TensorSpelling, std::string> (*checkTypedOp)(
      std::string_view op, const std::vector<TensorSpelling> &operands,
      std::string_view attrs, std::optional<std::string_view> element);
  /// What the compiler says at the end of a process (override folders no
  /// compile used). Its static destructors do it too; a process that leaves
  /// without them (std::_Exit) calls this first.
  void (*finishProcess)();
};

/// The library's file name, and the C symbol that returns its table.
inline constexpr const char *kCompilerLibraryFile = "libkiln-compiler.so";
inline constexpr const char *kCompilerLibrarySymbol = "kiln_compiler_library";

} // namespace kiln

#endif
