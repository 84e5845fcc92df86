//===- SharedKernel.h - CPU kernels as shared objects -----------*- C++ -*-===//
//
// A CPU program's object file linked once, when it is compiled, into a
// shared object, which later processes load with dlopen: no LLVM (the JIT
// in libkiln-cpu-jit.so and libLLVM are what a warm start would otherwise
// spend its time loading). The linker is the system's (`ld`, or the one
// KILN_CPU_LINKER names; empty: none, objects go to the JIT); where there
// is none, programs stay objects and the JIT loads them as before.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CPU_SHAREDKERNEL_H
#define KILN_RUNTIME_CPU_SHAREDKERNEL_H

#include "kiln/runtime/common/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kiln {

using CpuEntryFn = void (*)(void **, const int64_t *);

/// The shared object linked from `object`; nullopt when there is no linker
/// or it refused (the object is then loaded as it is).
std::optional<std::string> linkSharedKernel(std::string_view object);

/// Whether `binary` is an ELF shared object (else: a relocatable object).
bool isSharedKernel(std::string_view binary);

/// `_kiln_entry` of a shared object from linkSharedKernel, loaded once per
/// process; what kernels call (libkiln-cpu-runtime.so) is loaded first.
Expected<CpuEntryFn> loadSharedKernel(std::string_view binary);

/// Distinct shared objects loaded in this process.
size_t sharedKernelCount();

/// Loads libkiln-cpu-runtime.so (kernels' task runtime and memrefCopy)
/// with its symbols global: kernels bind to it.
Expected<void> loadCpuKernelRuntime();

} // namespace kiln

#endif
