//===- fuzz-program.cpp - libFuzzer target: the program front door --------===//
//
// Any bytes are a kiln program's text, compiled as kiln-run and the backend
// compile it: parse, verify, lower and generate code for the CPU (an object
// file) and for Vulkan (SPIR-V validated by SPIRV-Tools; no device needed).
// A bad program must come back as an error with a message; a crash, a hang,
// a sanitizer report or an escaping exception is a bug.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/Compiler.h"

#include <cstdlib>

namespace {
void check(const kiln::Error &error) {
  if (error.message.empty())
    std::abort(); // every error says what went wrong
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // One context for every input, as the engine keeps one per device.
  static std::unique_ptr<kiln::Compiler> owner = kiln::createCompiler();
  kiln::Compiler &compiler = *owner;
  std::string_view source(reinterpret_cast<const char *>(data), size);
  kiln::CompileOptions options;
  options.numThreads = 1; // the same code on every machine
  auto cpu = compiler.compileForCpu(source, options);
  if (!cpu) {
    check(cpu.error());
    // A program the parser or verifier refuses needs no second target.
    if (cpu.error().kind == kiln::ErrorKind::InvalidArgument)
      return 0;
  }
  auto vulkan = compiler.compileForVulkan(source, options);
  if (!vulkan)
    check(vulkan.error());
  return 0;
}
