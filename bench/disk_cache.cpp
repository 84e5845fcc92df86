//===- disk_cache.cpp - loading kernels from the disk cache ---------------===//
//
// kiln-bench-disk-cache [DEVICE] [PROGRAMS]: one engine compiles PROGRAMS
// distinct programs (default 20) into an empty cache directory; a second
// engine, as a fresh process would, loads them all from disk. Reports the
// time per program both ways and the MLIR contexts the second created.
// Process start to first result: bench/disk_cache_start.py.
//
//===----------------------------------------------------------------------===//
#include "kiln/backend/Engine.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <unistd.h>

using namespace kiln;
using Clock = std::chrono::steady_clock;

static std::string program(int i) {
  std::string t = "tensor<" + std::to_string(64 + i) + "xf32>";
  return "func.func @main(%a: " + t + ", %b: " + t + ") -> " + t + " {\n  %0 = kiln.add %a, %b : (" +
         t + ", " + t + ") -> " + t + "\n  %1 = kiln.exp %0 : " + t + "\n  return %1 : " + t +
         "\n}\n";
}

/// Milliseconds to get each program from `engine`: the median and the total.
static std::pair<double, double> timeAll(Engine &engine, int count) {
  std::vector<double> ms;
  for (int i = 0; i < count; ++i) {
    auto start = Clock::now();
    if (!engine.compile(program(i)))
      std::exit(1);
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  double total = 0;
  for (double m : ms)
    total += m;
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], total};
}

int main(int argc, char **argv) {
  auto device = DeviceId::parse(argc > 1 ? argv[1] : "cpu");
  int count = argc > 2 ? std::atoi(argv[2]) : 20;
  if (!device || count < 1) {
    std::fprintf(stderr, "usage: kiln-bench-disk-cache [cpu|cuda[:N]|vulkan[:N]] [PROGRAMS]\n");
    return 2;
  }
  auto root = std::filesystem::temp_directory_path() /
              ("kiln-bench-disk-cache-" + std::to_string(::getpid()));
  std::filesystem::remove_all(root);
  auto cold = Engine::create(*device, {root, 0, false});
  if (!cold) {
    std::fprintf(stderr, "%s\n", cold.error().message.c_str());
    return 1;
  }
  auto [coldMedian, coldTotal] = timeAll(**cold, count);
  size_t contexts = Engine::mlirContextsCreated();
  auto warm = Engine::create(*device, {root, 0, false});
  if (!warm)
    return 1;
  auto [warmMedian, warmTotal] = timeAll(**warm, count);
  std::printf("%s, %d programs (add + exp, 1 kernel each):\n", device->toString().c_str(), count);
  std::printf("  compiled (first engine):     median %.3f ms per program, %.1f ms in all\n",
              coldMedian, coldTotal);
  std::printf("  from disk (second engine):   median %.3f ms per program, %.1f ms in all; "
              "%zu compiled, %zu MLIR context(s) created\n",
              warmMedian, warmTotal, (*warm)->compileCount(),
              Engine::mlirContextsCreated() - contexts);
  std::filesystem::remove_all(root);
  return 0;
}
