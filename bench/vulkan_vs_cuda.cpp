//===- vulkan_vs_cuda.cpp - one kernel set, two GPU targets --------------===//
//
// Usage: kiln-bench-vulkan [runs] [vulkan-device-index]. Bandwidth-bound
// kernels, an f16 matmul (cooperative matrices on Vulkan where the device
// has them) and f32 matmuls (the SIMT kernel on both targets) compiled for
// Vulkan (SPIR-V) and for CUDA (PTX) on the same GPU in one process. Vulkan: median device time of one submission of the
// launches (timestamp queries). CUDA: mean of a synchronised batch of
// launches (host clock). Inputs are random and device-resident; the ratio
// column is CUDA time / Vulkan time (above 1: Vulkan faster).
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/Compiler.h"
#include "kiln/backend/Target.h"
#include "kiln/runtime/cuda/CudaProgram.h"
#include "kiln/runtime/vulkan/VulkanProgram.h"
#include "programs.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

using namespace kiln;

namespace {
struct Case {
  const char *name;
  std::string program;
  double bytes;     // moved: the rate is GB/s
  double flops = 0; // or computed: TFLOP/s
  double rate(double ms) const { return flops ? flops / ms / 1e9 : bytes / ms / 1e6; }
};

/// Random f32 host buffers for the inputs, zeroed ones for the outputs.
std::vector<std::vector<float>> hostBuffers(const GpuPlan &plan) {
  std::mt19937 rng(0);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<std::vector<float>> out;
  for (size_t i = 0; i < plan.inputCount + plan.outputCount; ++i) {
    out.emplace_back(plan.bufferBytes[i] / 4);
    if (i < plan.inputCount)
      for (float &x : out.back())
        x = u(rng);
  }
  return out;
}

double vulkanMs(Compiler &compiler, VulkanDevice &device, const Case &c, int runs) {
  CompileOptions options;
  options.vulkan = vulkanTargetOf(device.properties());
  auto compiled = compiler.compileForVulkan(c.program, options);
  if (!compiled) {
    std::fprintf(stderr, "%s: %s\n", c.name, compiled.error().message.c_str());
    return -1;
  }
  auto program = VulkanProgram::load(device, compiled->plan);
  if (!program) {
    std::fprintf(stderr, "%s: %s\n", c.name, program.error().message.c_str());
    return -1;
  }
  auto host = hostBuffers(compiled->plan);
  std::vector<void *> pointers;
  for (auto &h : host)
    pointers.push_back(h.data());
  if (!(*program)->run(pointers.data()))
    return -1;
  std::vector<double> times;
  for (int i = 0; i < runs + 2; ++i) {
    auto ms = (*program)->timeLaunches();
    if (!ms)
      return -1;
    if (i >= 2)
      times.push_back(*ms);
  }
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  return times[times.size() / 2];
}

double cudaMs(Compiler &compiler, CudaDevice &device, const Case &c, int runs) {
  CompileOptions options;
  options.chip = device.properties().kernelChip();
  auto compiled = compiler.compileForCuda(c.program, options);
  if (!compiled)
    return -1;
  auto program = CudaProgram::load(device, compiled->plan);
  if (!program)
    return -1;
  const GpuPlan &plan = compiled->plan;
  auto host = hostBuffers(plan);
  std::vector<uint64_t> buffers;
  for (size_t i = 0; i < plan.bufferBytes.size(); ++i) {
    buffers.push_back(*device.allocate(plan.bufferBytes[i]));
    if (i < plan.inputCount)
      (void)device.copyToDevice(buffers[i], host[i].data(), plan.bufferBytes[i]);
  }
  auto batch = [&](int count) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < count; ++i)
      (void)(*program)->launchAll(buffers);
    (void)device.sync();
    return std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now() - start).count() / count;
  };
  batch(2);
  double ms = batch(runs);
  for (uint64_t b : buffers)
    (void)device.free(b);
  return ms;
}
} // namespace

int main(int argc, char **argv) {
  int runs = argc > 1 ? std::atoi(argv[1]) : 20;
  int vulkanIndex = argc > 2 ? std::atoi(argv[2]) : 0;
  auto vulkan = VulkanDevice::create(vulkanIndex);
  if (!vulkan) {
    std::fprintf(stderr, "kiln-bench-vulkan: %s\n", vulkan.error().message.c_str());
    return 1;
  }
  auto cuda = CudaDevice::create(0);
  std::printf("Vulkan device: %s; CUDA: %s\n\n", (*vulkan)->properties().name.c_str(),
              cuda ? "cuda:0" : "none");
  std::vector<Case> cases = {
      {"add 2^28 f32", bench::addProgram("268435456"), 3.0 * 4 * (1 << 28)},
      {"reduce_sum 16384^2 f32 last dim", bench::reduceSumRowsProgram(16384, 16384),
       4.0 * 16384 * 16384},
      {"softmax 8192^2 f32 last dim", bench::softmaxRowsProgram(8192, 8192),
       2.0 * 4 * 8192 * 8192},
      {"matmul 4096^3 f16 (f32 accumulate)", bench::squareMatmulProgram(4096, "f16"), 0,
       2.0 * 4096 * 4096 * 4096},
      {"matmul 4096^3 f32 (SIMT kernel on both)", bench::squareMatmulProgram(4096, "f32"), 0,
       2.0 * 4096 * 4096 * 4096},
      {"matmul 1024^3 f32 (SIMT kernel on both)", bench::squareMatmulProgram(1024, "f32"), 0,
       2.0 * 1024 * 1024 * 1024},
  };
  auto compilerOwner = createCompiler();
  Compiler &compiler = *compilerOwner;
  std::printf("| case | Vulkan ms | Vulkan GB/s or TFLOP/s | CUDA ms | CUDA GB/s or TFLOP/s | "
              "Vulkan/CUDA speed |\n|---|---|---|---|---|---|\n");
  for (const Case &c : cases) {
    double v = vulkanMs(compiler, **vulkan, c, runs);
    double g = cuda ? cudaMs(compiler, **cuda, c, runs) : -1;
    std::printf("| %s | %.3f | %.0f | %.3f | %.0f | %.2fx |\n", c.name, v, c.rate(v), g,
                c.rate(g), g > 0 && v > 0 ? g / v : 0.0);
    std::fflush(stdout);
  }
  return 0;
}
