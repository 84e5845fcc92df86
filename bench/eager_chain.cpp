//===- eager_chain.cpp - per-op host cost of eager launches --------------===//
//
// Usage: kiln-bench-eager [DEVICE] [OPS]. A chain of OPS adds, x = x + w on
// 1024 f32 (each reads the previous op's output), through Backend::apply.
// Reports microseconds per op to enqueue the chain (host time, no wait) and
// to enqueue it and sync; the median of 5 chains after a warm-up chain, and
// checks the result.
//
//===----------------------------------------------------------------------===//
#include "kiln/backend/Backend.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

using namespace kiln;

namespace {
using Clock = std::chrono::steady_clock;

int fail(const Error &e) {
  std::fprintf(stderr, "kiln-bench-eager: %s\n", e.message.c_str());
  return 1;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
} // namespace

int main(int argc, char **argv) {
  auto device = DeviceId::parse(argc > 1 ? argv[1] : "cpu");
  int ops = argc > 2 ? std::atoi(argv[2]) : 1000;
  if (!device)
    return fail(device.error());
  if (ops < 1)
    return fail(Error{ErrorKind::InvalidArgument, "OPS must be at least 1"});
  auto backend = Backend::create(*device);
  if (!backend)
    return fail(backend.error());
  Backend &b = **backend;
  HostTensor zeros(DType::F32, {1024}), ones(DType::F32, {1024});
  std::fill_n(zeros.as<float>(), 1024, 0.0f); // HostTensor leaves its data uninitialised
  std::fill_n(ones.as<float>(), 1024, 1.0f);
  auto x = b.upload(zeros), w = b.upload(ones);
  if (!x || !w)
    return fail(x ? w.error() : x.error());

  std::vector<double> enqueue, total;
  for (int rep = 0; rep < 6; ++rep) {
    Tensor t = *x;
    auto start = Clock::now();
    for (int i = 0; i < ops; ++i) {
      auto next = b.apply("kiln.add", {t, *w}, DType::F32, {1024});
      if (!next)
        return fail(next.error());
      t = std::move(*next);
    }
    auto queued = Clock::now();
    if (auto ok = b.sync(); !ok)
      return fail(ok.error());
    auto done = Clock::now();
    auto result = b.download(t);
    if (!result)
      return fail(result.error());
    if (result->as<float>()[1023] != float(ops))
      return fail(Error{ErrorKind::Launch, "the chain computed " +
                                               std::to_string(result->as<float>()[1023]) +
                                               ", not " + std::to_string(ops)});
    if (rep == 0)
      continue; // warm-up: compiles the add
    enqueue.push_back(std::chrono::duration<double, std::micro>(queued - start).count() / ops);
    total.push_back(std::chrono::duration<double, std::micro>(done - start).count() / ops);
  }
  std::printf("%s: chain of %d adds of 1024 f32: %.2f us per op enqueued, %.2f us per op "
              "with the final sync (median of 5)\n",
              b.name().c_str(), ops, median(enqueue), median(total));
  return 0;
}
