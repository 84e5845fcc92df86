//===- CompilerLibrary.h - load the compiler at first use -------*- C++ -*-===//
//
// The backend reaches the compiler (libkiln-compiler.so: the dialect,
// lowering and MLIR) only through this loader, at its first compile or
// typed-op check: a process whose kernels all come from the disk cache
// never loads MLIR (docs/caches.md has the start-up times).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_BACKEND_COMPILERLIBRARY_H
#define KILN_BACKEND_COMPILERLIBRARY_H

#include "kiln/Lowering/CompilerLibrary.h"

namespace kiln {

/// The compiler library's table (runtime/common/KilnLibrary.h), loaded once
/// per process from, in order:
/// `KILN_COMPILER_LIBRARY` (a path), the folder of the binary that holds
/// the backend and its `../lib`, the build tree it was built in, and the
/// dynamic loader's search path. Unsupported, with every place tried, when
/// none loads or the one found is from another kiln build.
Expected<const CompilerLibraryApi *> compilerLibrary();

/// A new compiler from the library.
Expected<std::unique_ptr<Compiler>> loadCompiler();

/// Whether this process has loaded the compiler library (tests).
bool compilerLibraryLoaded();

/// Has a loaded compiler library say what it says at a process's end
/// (CompilerLibraryApi::finishProcess); for a process leaving by std::_Exit.
void finishCompilerLibrary();

} // namespace kiln

#endif
