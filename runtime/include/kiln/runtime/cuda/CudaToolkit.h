//===- CudaToolkit.h - where the CUDA toolkit's files are -------*- C++ -*-===//
//
// kiln needs no CUDA toolkit to run (the driver JITs PTX), but uses one
// where it is installed: libdevice gives f64 math, ptxas may assemble
// kernels (docs/cuda.md, "Cubins from ptxas"). One place says where.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CUDA_CUDATOOLKIT_H
#define KILN_RUNTIME_CUDA_CUDATOOLKIT_H

#include <cstdlib>
#include <filesystem>
#include <string>

namespace kiln {

/// `relative` (as "bin/ptxas") under the toolkit, $CUDA_HOME or else
/// /usr/local/cuda; empty where that file does not exist.
inline std::string cudaToolkitFile(const std::string &relative) {
  const char *root = std::getenv("CUDA_HOME");
  std::string path = std::string(root && *root ? root : "/usr/local/cuda") + "/" + relative;
  std::error_code error;
  return std::filesystem::exists(path, error) ? path : "";
}

/// The ptxas that assembles the kernels a CUDA device runs, read once:
/// KILN_PTXAS names one (a path or a name on PATH); unset, empty or `off`,
/// the driver's JIT does. (The toolkit's is to become the default once a
/// GPU run has measured it: docs/cuda.md, "Cubins from ptxas".)
inline const std::string &devicePtxas() {
  static const std::string ptxas = [] {
    const char *setting = std::getenv("KILN_PTXAS");
    std::string value = setting ? setting : "";
    return value == "off" ? std::string() : value;
  }();
  return ptxas;
}

} // namespace kiln

#endif
