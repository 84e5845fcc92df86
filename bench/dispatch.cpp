//===- dispatch.cpp - cold compile and warm dispatch on the CPU ----------===//
//
// Cold compile: a program never seen before, compiled in a process whose
// compiler is already warm. Warm dispatch: host time per run of a tiny cached
// kernel (no checks, buffers ready), over many runs; then the same through
// a typed op (ops::add: both caches, checks, a pooled result tensor), the
// C++ half of a Python op's time (bench/python_dispatch.py).
//
//===----------------------------------------------------------------------===//
#include "kiln/backend/Ops.h"

#include <chrono>
#include <cstdio>

using namespace kiln;
using Clock = std::chrono::steady_clock;

static std::string addProgram(int64_t n, const char *tag) {
  std::string t = "tensor<" + std::to_string(n) + "xf32>";
  return "// " + std::string(tag) + "\nfunc.func @main(%a: " + t + ", %b: " + t +
         ") -> " + t + " {\n  %0 = kiln.add %a, %b : (" + t + ", " + t + ") -> " +
         t + "\n  return %0 : " + t + "\n}\n";
}

int main() {
  // No disk cache: the cold compile is a compile (bench/disk_cache.cpp
  // measures loads from disk).
  auto engine = Engine::create({DeviceType::Cpu, 0}, DiskCacheConfig{});
  if (!engine)
    return 1;
  if (!(*engine)->compile(addProgram(1 << 10, "warm-up")))
    return 1;
  auto start = Clock::now();
  auto cold = (*engine)->compile(addProgram(1 << 24, "cold"));
  double coldMs = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  if (!cold)
    return 1;
  std::printf("cold compile of add 2^24 f32 (warm process): %.1f ms (", coldMs);
  for (const StageTime &s : (*cold)->stageTimes())
    std::printf("%s %.1f ", s.stage.c_str(), s.milliseconds);
  std::printf(")\n");

  auto tiny = (*engine)->compile(addProgram(16, "tiny"));
  if (!tiny)
    return 1;
  float a[16] = {}, b[16] = {}, c[16] = {};
  void *buffers[] = {a, b, c};
  for (int i = 0; i < 1000; ++i)
    (*tiny)->runUnchecked(buffers, nullptr);
  constexpr int kRuns = 100000;
  start = Clock::now();
  for (int i = 0; i < kRuns; ++i)
    (*tiny)->runUnchecked(buffers, nullptr);
  double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count() / kRuns;
  std::printf("warm dispatch of a tiny cached kernel: %.3f us per run "
              "(Program::runUnchecked: buffers ready)\n", us);

  // The checked path: signature checks and a fresh output tensor per run.
  std::vector<HostTensor> inputs(2, HostTensor(DType::F32, {16}));
  start = Clock::now();
  for (int i = 0; i < kRuns; ++i)
    if (!(*tiny)->run(inputs))
      return 1;
  us = std::chrono::duration<double, std::micro>(Clock::now() - start).count() / kRuns;
  std::printf("warm dispatch with checks and output allocation: %.3f us per run "
              "(Program::run)\n", us);

  auto backend = Backend::shared({DeviceType::Cpu, 0});
  if (!backend)
    return 1;
  auto x = (*backend)->upload(HostTensor(DType::F32, {4}));
  if (!x || !ops::add(*x, *x))
    return 1;
  start = Clock::now();
  for (int i = 0; i < kRuns; ++i)
    if (!ops::add(*x, *x))
      return 1;
  us = std::chrono::duration<double, std::micro>(Clock::now() - start).count() / kRuns;
  std::printf("warm typed op, ops::add of 4 x f32 on cpu: %.3f us per op "
              "(result type and program from their caches, result from the pool)\n", us);

  // CUDA: compiling needs no GPU, so the cold compile to PTX is measured here.
  auto compilerOwner = createCompiler();
  Compiler &compiler = *compilerOwner;
  CompileOptions options;
  if (!compiler.compileForCuda(addProgram(1 << 10, "cuda warm-up"), options))
    return 1;
  start = Clock::now();
  auto ptx = compiler.compileForCuda(addProgram(1 << 28, "cuda cold"), options);
  coldMs = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  if (!ptx)
    return 1;
  std::printf("cold compile of add 2^28 f32 to PTX for sm_90 (warm process): %.1f ms\n",
              coldMs);
  return 0;
}
