//===- Npy.h - NumPy .npy files -----------------------------------*- C++ -*-===//
#ifndef KILN_RUNTIME_NPY_H
#define KILN_RUNTIME_NPY_H

#include "kiln/runtime/Error.h"
#include "kiln/runtime/HostTensor.h"

#include <string>

namespace kiln {

/// Reads a .npy file (format 1.0-3.0, C or Fortran order, little-endian)
/// into a row-major tensor. Errors name the file and the problem.
Expected<HostTensor> readNpy(const std::string &path);
/// Writes `tensor` as a C-order .npy file (format 1.0).
Expected<void> writeNpy(const std::string &path, const HostTensor &tensor);

} // namespace kiln

#endif
