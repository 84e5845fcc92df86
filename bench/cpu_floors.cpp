//===- cpu_floors.cpp - this machine's memory bandwidth and peak f32 FLOP/s -===//
//
// The floors the CPU kernels are measured against (docs/benchmarks-cpu.md):
// STREAM-like copy and triad over arrays far larger than the caches, one
// slice per thread (each thread first touches its own slice), and a peak
// f32 FMA rate from independent accumulators, on the widest vectors the
// compiler targets here (-march=native: AVX-512 or AVX2). Bytes count as STREAM counts them
// (each array read or written once; write-allocate reads are not counted).
// Usage: kiln-bench-cpu-floors [threads]
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <immintrin.h>
#include <memory>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

/// Runs body(thread) on `threads` threads and returns the best wall time of
/// `repeats` runs, in seconds.
double bestOf(int repeats, int threads, const std::function<void(int)> &body) {
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    auto start = Clock::now();
    std::vector<std::jthread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back(body, t);
    pool.clear();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - start).count());
  }
  return best;
}

// The widest FMA the compiler targets here.
#if defined(__AVX512F__)
using Vec = __m512;
constexpr int kLanes = 16;
Vec fma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
Vec splat(float x) { return _mm512_set1_ps(x); }
#elif defined(__FMA__)
using Vec = __m256;
constexpr int kLanes = 8;
Vec fma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
Vec splat(float x) { return _mm256_set1_ps(x); }
#else
#error "kiln-bench-cpu-floors needs FMA (x86-64 with AVX2 or AVX-512)"
#endif

/// 10 independent accumulators hide the FMA latency (4 cycles, 2 units)
/// and leave registers for the operands.
constexpr int kChains = 10;
constexpr double kFlopsPerIteration = 2.0 * kLanes * kChains;

/// One thread's FMA loop.
void fmaLoop(long iterations, float *sink) {
  Vec acc[kChains], x = splat(1.0001f), y = splat(0.9999f);
  for (int c = 0; c < kChains; ++c)
    acc[c] = splat(float(c));
  for (long i = 0; i < iterations; ++i)
    for (int c = 0; c < kChains; ++c)
      acc[c] = fma(acc[c], x, y);
  float lanes[kLanes], s = 0;
  for (int c = 0; c < kChains; ++c) {
    std::memcpy(lanes, &acc[c], sizeof lanes);
    for (float l : lanes)
      s += l;
  }
  *sink = s;
}

} // namespace

int main(int argc, char **argv) {
  int threads = argc > 1 ? std::atoi(argv[1]) : int(std::thread::hardware_concurrency());
  const size_t n = size_t(1) << 25; // 128 MiB per array
  std::unique_ptr<float[]> a(new float[n]), b(new float[n]), c(new float[n]);
  size_t slice = n / threads;
  auto range = [&](int t) { return std::pair{t * slice, t + 1 == threads ? n : (t + 1) * slice}; };
  bestOf(1, threads, [&](int t) {
    auto [lo, hi] = range(t);
    for (size_t i = lo; i < hi; ++i)
      a[i] = 1, b[i] = 2, c[i] = 0;
  });
  double copy = bestOf(5, threads, [&](int t) {
    auto [lo, hi] = range(t);
    std::copy(a.get() + lo, a.get() + hi, c.get() + lo);
  });
  double triad = bestOf(5, threads, [&](int t) {
    auto [lo, hi] = range(t);
    for (size_t i = lo; i < hi; ++i)
      a[i] = b[i] + 3.0f * c[i];
  });
  std::vector<float> sinks(threads);
  const long iterations = 100'000'000;
  double fmaSeconds = bestOf(3, threads, [&](int t) { fmaLoop(iterations, &sinks[t]); });
  double flops = kFlopsPerIteration * iterations * threads;
  std::printf("threads %d\n", threads);
  std::printf("copy  %.1f GB/s\n", 2.0 * n * sizeof(float) / copy / 1e9);
  std::printf("triad %.1f GB/s\n", 3.0 * n * sizeof(float) / triad / 1e9);
  std::printf("f32 fma peak %.1f GFLOP/s\n", flops / fmaSeconds / 1e9);
  return sinks[0] == 12345.f; // keeps the loops' results alive
}
