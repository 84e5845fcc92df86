//===- cuda_transfer.cpp - host<->device bandwidth, pageable vs pinned ----===//
//
// Usage: kiln-bench-transfer [MiB] [runs]. Copies one buffer to the device
// and back `runs` times from ordinary (pageable) host memory and from
// kiln's pinned staging memory, and prints the median GB/s of each way.
//
//===----------------------------------------------------------------------===//
#include "kiln/runtime/cuda/CudaDevice.h"
#include "kiln/runtime/common/HostTensor.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <vector>

using namespace kiln;

namespace {
double medianGBps(size_t bytes, int runs, const std::function<bool()> &copy) {
  std::vector<double> rates;
  for (int i = 0; i < runs + 1; ++i) {
    auto start = std::chrono::steady_clock::now();
    if (!copy())
      return -1;
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (i > 0) // the first run pays page faults
      rates.push_back(bytes / s / 1e9);
  }
  std::nth_element(rates.begin(), rates.begin() + rates.size() / 2, rates.end());
  return rates[rates.size() / 2];
}
} // namespace

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 256;
  int runs = argc > 2 ? std::atoi(argv[2]) : 10;
  size_t bytes = mib << 20;
  auto device = CudaDevice::create(0);
  if (!device) {
    std::fprintf(stderr, "kiln-bench-transfer: %s\n", device.error().message.c_str());
    return 1;
  }
  CudaDevice &d = **device;
  auto gpu = d.allocate(bytes);
  auto pinned = d.allocatePinned(bytes);
  void *pageable = allocateHostBuffer(bytes);
  if (!gpu || !pinned || !pageable)
    return 1;
  std::memset(pageable, 1, bytes);
  std::memset(*pinned, 1, bytes);
  std::printf("| %zu MiB | host->device GB/s | device->host GB/s |\n|---|---|---|\n", mib);
  for (auto [name, host] : {std::pair<const char *, void *>{"pageable", pageable},
                            {"pinned staging", *pinned}}) {
    double h2d = medianGBps(bytes, runs, [&] { return bool(d.copyToDevice(*gpu, host, bytes)); });
    double d2h = medianGBps(bytes, runs, [&] { return bool(d.copyToHost(host, *gpu, bytes)); });
    std::printf("| %s | %.1f | %.1f |\n", name, h2d, d2h);
  }
  freeHostBuffer(pageable);
  (void)d.freePinned(*pinned);
  (void)d.free(*gpu);
  return 0;
}
