//===- CpuFeatures.h - the CPU features kernels are compiled for -*- C++ -*-===//
//
// CPU kernels are compiled for the host with all its features. The one
// exception, KILN_CPU_FEATURES, applies LLVM target features over the
// host's ("-avx512f": AVX2 code of 8 lanes on an AVX-512 host; "-avx":
// SSE's 4 lanes), so that one machine runs the kernels a narrower host
// gets (CI does: docs/testing.md). The compile and the host fingerprint
// (hence every cache key) both take it from here; the compile leaves out a
// "+feature" the host lacks (lowering/lib/CPU/CpuCompile.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CPU_CPUFEATURES_H
#define KILN_RUNTIME_CPU_CPUFEATURES_H

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

namespace kiln {

/// KILN_CPU_FEATURES as LLVM takes it ("-avx512f,+fma"), read once; an
/// item without its + or - is left out with a warning (LLVM would take it
/// for something else).
inline const std::string &cpuFeatureOverrides() {
  static const std::string overrides = [] {
    const char *setting = std::getenv("KILN_CPU_FEATURES");
    std::istringstream items(setting ? setting : "");
    std::string item, kept;
    while (std::getline(items, item, ','))
      if (item.size() > 1 && (item[0] == '+' || item[0] == '-'))
        kept += (kept.empty() ? "" : ",") + item;
      else if (!item.empty())
        std::fprintf(stderr,
                     "kiln: KILN_CPU_FEATURES: '%s' is not +feature or -feature; "
                     "left out\n",
                     item.c_str());
    return kept;
  }();
  return overrides;
}

} // namespace kiln

#endif
