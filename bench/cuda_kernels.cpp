//===- cuda_kernels.cpp - kiln's CUDA kernels, device-resident timing -----===//
//
// Usage: kiln-bench-cuda [runs] [TILE_N:STAGES[:STEP_BYTES]]... (KILN_BENCH_CASES=TEXT
// runs only the cases whose name holds TEXT). For each case: compile,
// put random inputs on the GPU once, run the plan's launches `runs` times
// after a warm-up, and print the mean time per run (host clock around a
// synchronised batch) with the bytes moved and the resulting bandwidth or
// FLOP rate. Given tensor-core tilings, only the half-precision matmuls run,
// once per tiling (a tuning sweep).
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/Compiler.h"
#include "kiln/runtime/cuda/CudaProgram.h"
#include "programs.h"

#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <random>

using namespace kiln;

namespace {
struct Case {
  const char *name;
  std::string program;
  double bytes, flops; // per run, for the rate column
  bool tf32 = false;
};


std::vector<Case> cases() {
  std::string n28 = "268435456", n26 = "67108864";
  std::string g = bench::tensor(n26), s = bench::tensor("8192x8192");
  std::vector<Case> out;
  out.push_back({"add 2^28 f32", bench::addProgram(n28), 3.0 * 4 * (1 << 28), 0});
  out.push_back({"gelu(x*w+b) 2^26 f32",
                 "func.func @main(%x: " + g + ", %w: " + g + ", %b: " + g + ") -> " + g +
                     " {\n %0 = kiln.mul %x, %w : (" + g + ", " + g + ") -> " + g +
                     "\n %1 = kiln.add %0, %b : (" + g + ", " + g + ") -> " + g +
                     "\n %2 = kiln.gelu %1 : " + g + "\n return %2 : " + g + "\n}",
                 4.0 * 4 * (1 << 26), 0});
  out.push_back({"reduce_sum 16384^2 f32 last dim",
                 bench::reduceSumRowsProgram(16384, 16384), 4.0 * 16384 * 16384, 0});
  out.push_back({"softmax 8192^2 f32 last dim", bench::softmaxRowsProgram(8192, 8192),
                 2.0 * 4 * 8192 * 8192, 0});
  out.push_back({"layer_norm 8192^2 f32",
                 "func.func @main(%x: " + s + ", %w: " + bench::tensor("8192") + ", %b: " +
                     bench::tensor("8192") + ") -> " + s + " {\n %0 = kiln.layer_norm %x, %w, %b : (" +
                     s + ", " + bench::tensor("8192") + ", " + bench::tensor("8192") + ") -> " + s +
                     "\n return %0 : " + s + "\n}",
                 2.0 * 4 * 8192 * 8192, 0});
  out.push_back({"rms_norm 8192^2 f32",
                 "func.func @main(%x: " + s + ", %w: " + bench::tensor("8192") + ") -> " + s +
                     " {\n %0 = kiln.rms_norm %x, %w {eps = 1.0e-6 : f64} : (" + s + ", " +
                     bench::tensor("8192") + ") -> " + s + "\n return %0 : " + s + "\n}",
                 2.0 * 4 * 8192 * 8192, 0});
  std::string m = bench::tensor("4096x4096");
  out.push_back({"matmul 4096^3 f32",
                 "func.func @main(%a: " + m + ", %b: " + m + ") -> " + m +
                     " {\n %0 = kiln.matmul %a, %b : (" + m + ", " + m + ") -> " + m +
                     "\n return %0 : " + m + "\n}",
                 3.0 * 4 * 4096 * 4096, 2.0 * 4096.0 * 4096 * 4096});
  out.push_back(out.back());
  out.back().name = "matmul 4096^3 f32 as tf32";
  out.back().tf32 = true;
  std::string h4 = bench::tensor("4096x4096", "bf16");
  out.push_back({"matmul 4096^3 bf16 (f32 accumulate)",
                 "func.func @main(%a: " + h4 + ", %b: " + h4 + ") -> " + m +
                     " {\n %0 = kiln.matmul %a, %b : (" + h4 + ", " + h4 + ") -> " + m +
                     "\n return %0 : " + m + "\n}",
                 (2.0 * 2 + 4) * 4096 * 4096, 2.0 * 4096.0 * 4096 * 4096});
  std::string h = bench::tensor("8192x8192", "bf16"), hf = bench::tensor("8192x8192");
  out.push_back({"matmul 8192^3 bf16 (f32 accumulate)",
                 "func.func @main(%a: " + h + ", %b: " + h + ") -> " + hf +
                     " {\n %0 = kiln.matmul %a, %b : (" + h + ", " + h + ") -> " + hf +
                     "\n return %0 : " + hf + "\n}",
                 (2.0 * 2 + 4) * 8192 * 8192, 2.0 * 8192.0 * 8192 * 8192});
  std::string f = bench::tensor("8192x8192", "f16");
  out.push_back({"matmul 8192^3 f16 (f32 accumulate)",
                 "func.func @main(%a: " + f + ", %b: " + f + ") -> " + hf +
                     " {\n %0 = kiln.matmul %a, %b : (" + f + ", " + f + ") -> " + hf +
                     "\n return %0 : " + hf + "\n}",
                 (2.0 * 2 + 4) * 8192 * 8192, 2.0 * 8192.0 * 8192 * 8192});
  return out;
}
/// Host time per launch of a tiny cached kernel on device-resident
/// buffers: 10k launches, one sync at the end.
int warmDispatch(Compiler &compiler, CudaDevice &device) {
  CompileOptions options;
  options.chip = device.properties().kernelChip();
  auto compiled = compiler.compileForCuda(bench::addProgram("1024"), options);
  if (!compiled)
    return 1;
  auto program = CudaProgram::load(device, compiled->plan);
  if (!program)
    return 1;
  std::vector<uint64_t> buffers;
  for (size_t bytes : compiled->plan.bufferBytes)
    buffers.push_back(*device.allocate(bytes));
  for (int i = 0; i < 100; ++i)
    (void)(*program)->launchAll(buffers);
  (void)device.sync();
  constexpr int launches = 10000;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < launches; ++i)
    if (!(*program)->launchAll(buffers))
      return 1;
  if (!device.sync())
    return 1;
  double us = std::chrono::duration<double, std::micro>(
                  std::chrono::steady_clock::now() - start).count() / launches;
  std::printf("| warm dispatch, add of 1024 f32, 10k launches | %.2f us per launch (host) |\n",
              us);
  for (uint64_t b : buffers)
    (void)device.free(b);
  return 0;
}
} // namespace

int main(int argc, char **argv) {
  int runs = argc > 1 ? std::atoi(argv[1]) : 20;
  using Tiling = CudaMmaMatmulTunables;
  std::vector<Tiling> tilings;
  for (int i = 2; i < argc; ++i) {
    Tiling t;
    if (std::sscanf(argv[i], "%ld:%ld:%ld", &t.tileN, &t.stages, &t.stepBytes) < 2) {
      std::fprintf(stderr, "kiln-bench-cuda: a tiling is TILE_N:STAGES[:STEP_BYTES], got '%s'\n",
                   argv[i]);
      return 2;
    }
    tilings.push_back(t);
  }
  bool sweep = !tilings.empty();
  if (!sweep)
    tilings.push_back(Tiling{});
  auto device = CudaDevice::create(0);
  if (!device) {
    std::fprintf(stderr, "kiln-bench-cuda: %s\n", device.error().message.c_str());
    return 1;
  }
  auto compilerOwner = createCompiler();
  Compiler &compiler = *compilerOwner;
  std::printf("| case | kiln ms | GB/s | TFLOP/s |\n|---|---|---|---|\n");
  const char *only = std::getenv("KILN_BENCH_CASES");
  for (const Case &c : cases())
  for (const Tiling &tiling : tilings) {
    if (sweep && !c.tf32 && !std::string_view(c.name).contains("bf16"))
      continue;
    if (only && !std::string_view(c.name).contains(only))
      continue;
    CompileOptions options;
    options.chip = (*device)->properties().kernelChip();
    options.mma = tiling;
    options.tf32 = c.tf32;
    std::string name = c.name;
    if (sweep)
      name += " tile 128x" + std::to_string(tiling.tileN) + ", " +
              std::to_string(tiling.stages) + " stages of " + std::to_string(tiling.stepBytes) +
              " B";
    auto compiled = compiler.compileForCuda(c.program, options);
    if (!compiled) {
      std::printf("| %s | compile error: %s |\n", name.c_str(),
                  compiled.error().message.c_str());
      continue;
    }
    auto program = CudaProgram::load(**device, compiled->plan);
    if (!program)
      return 1;
    const GpuPlan &plan = (*program)->gpuPlan();
    std::vector<uint64_t> buffers;
    std::mt19937 rng(0);
    for (size_t i = 0; i < plan.bufferBytes.size(); ++i) {
      buffers.push_back(*(*device)->allocate(plan.bufferBytes[i]));
      if (i < plan.inputCount) { // random inputs: never time on zeros
        std::vector<float> host(plan.bufferBytes[i] / 4);
        std::uniform_real_distribution<float> u(-1, 1);
        for (float &x : host)
          x = u(rng);
        (void)(*device)->copyToDevice(buffers[i], host.data(), plan.bufferBytes[i]);
      }
    }
    auto runBatch = [&](int count) {
      auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < count; ++i)
        if (!(*program)->launchAll(buffers))
          return -1.0;
      if (!(*device)->sync())
        return -1.0;
      return std::chrono::duration<double, std::milli>(
                 std::chrono::steady_clock::now() - start).count() / count;
    };
    runBatch(2);
    double ms = runBatch(runs);
    std::printf("| %s | %.3f | %.0f | %.2f |\n", name.c_str(), ms, c.bytes / ms / 1e6,
                c.flops / ms / 1e9);
    std::fflush(stdout);
    for (uint64_t b : buffers)
      (void)(*device)->free(b);
  }
  return sweep ? 0 : warmDispatch(compiler, **device);
}
