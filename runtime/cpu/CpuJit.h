//===- CpuJit.h - what libkiln-cpu-jit.so exports ---------------*- C++ -*-===//
//
// The CPU device's LLVM half: LLVM's ORC JIT, which loads the CPU
// lowering's objects, and the host detection that fingerprints them. A
// library of its own (runtime/common/KilnLibrary.h), loaded when the first
// CPU device is created, so that a process that uses only GPUs never loads
// LLVM. CpuDevice.cpp is its loader.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CPU_CPUJIT_H
#define KILN_RUNTIME_CPU_CPUJIT_H

#include "kiln/runtime/common/Error.h"

#include <string>
#include <string_view>

namespace kiln {

struct CpuJitApi {
  const char *buildId; // first, as every kiln library's table
  /// "cpu-<triple>-<cpu>+<hash of the host's features>", the same as the
  /// CPU compiler's.
  Expected<std::string> (*hostFingerprint)();
  /// `_kiln_entry` of a relocatable object, loaded once per process.
  Expected<void (*)(void **)> (*load)(std::string_view object);
  size_t (*loadedObjectCount)();
};

inline constexpr const char *kCpuJitLibraryFile = "libkiln-cpu-jit.so";
inline constexpr const char *kCpuJitLibrarySymbol = "kiln_cpu_jit_library";

} // namespace kiln

#endif
