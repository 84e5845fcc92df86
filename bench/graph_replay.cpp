//===- graph_replay.cpp - a captured 100-kernel sequence vs eager dispatch -===//
//
// Usage: kiln-bench-graph [DEVICE] [REPS]. The sequence: 50 times x = x * w;
// x = x + w on 1024 f32 (100 tiny kernels, launch-bound). Eager: each op
// through Backend::apply (kernel-cache lookup, pool allocation, launch);
// graph: the same sequence captured once and replayed. Host time per
// sequence, including a sync at the end of each, mean over REPS after one
// warm-up sequence.
//
//===----------------------------------------------------------------------===//
#include "kiln/backend/Backend.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

using namespace kiln;

namespace {
using Clock = std::chrono::steady_clock;

int fail(const Error &e) {
  std::fprintf(stderr, "kiln-bench-graph: %s\n", e.message.c_str());
  return 1;
}
} // namespace

int main(int argc, char **argv) {
  auto device = DeviceId::parse(argc > 1 ? argv[1] : "cpu");
  int reps = argc > 2 ? std::atoi(argv[2]) : 100;
  if (!device)
    return fail(device.error());
  auto backend = Backend::create(*device);
  if (!backend)
    return fail(backend.error());
  Backend &b = **backend;
  HostTensor host(DType::F32, {1024});
  for (int i = 0; i < 1024; ++i)
    host.as<float>()[i] = 1.0f + 1e-4f * static_cast<float>(i);
  if (auto ok = b.graphPrepare(); !ok)
    return fail(ok.error());
  auto x = b.upload(host), w = b.upload(host);
  if (!x || !w)
    return fail(x ? w.error() : x.error());

  auto sequence = [&](Tensor t) -> Expected<Tensor> {
    for (int i = 0; i < 100; ++i) {
      auto next = b.apply(i % 2 ? "kiln.add" : "kiln.mul", {t, *w}, DType::F32, {1024});
      if (!next)
        return next;
      t = std::move(*next);
    }
    return t;
  };
  auto timed = [&](auto &&body) -> Expected<double> {
    auto start = Clock::now();
    for (int r = 0; r < reps; ++r) {
      if (auto ok = body(); !ok)
        return std::unexpected(ok.error());
      if (auto ok = b.sync(); !ok)
        return std::unexpected(ok.error());
    }
    return std::chrono::duration<double, std::micro>(Clock::now() - start).count() / reps;
  };

  if (auto warm = sequence(*x); !warm)
    return fail(warm.error());
  b.memoryPersistentAllocations(false); // eager ops allocate from the pool
  auto eager = timed([&]() -> Expected<void> {
    auto y = sequence(*x);
    if (!y)
      return std::unexpected(y.error());
    return {};
  });
  if (!eager)
    return fail(eager.error());

  b.memoryPersistentAllocations(true);
  if (auto ok = b.graphStartCapture(); !ok)
    return fail(ok.error());
  auto captured = sequence(*x);
  auto graph = b.graphStopCapture();
  if (!captured || !graph)
    return fail(captured ? graph.error() : captured.error());
  if (auto ok = b.graphReplay(*graph); !ok)
    return fail(ok.error());
  auto replay = timed([&] { return b.graphReplay(*graph); });
  if (!replay)
    return fail(replay.error());
  std::printf("| %s: 100 kernels on 1024 f32 | eager %.1f us | graph replay %.1f us | %.1fx |\n",
              b.name().c_str(), *eager, *replay, *eager / *replay);
  return 0;
}
