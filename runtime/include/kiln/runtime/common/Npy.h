//===- Npy.h - NumPy .npy files -----------------------------------*- C++ -*-===//
#ifndef KILN_RUNTIME_COMMON_NPY_H
#define KILN_RUNTIME_COMMON_NPY_H

#include "kiln/runtime/common/Error.h"
#include "kiln/runtime/common/HostTensor.h"

#include <string>
#include <string_view>

namespace kiln {

/// Reads a .npy file (format 1.0-3.0, C or Fortran order, little-endian)
/// into a row-major tensor. Errors name the file and the problem.
Expected<HostTensor> readNpy(const std::string &path);
/// The same from the file's bytes; `name` stands for the file in errors.
Expected<HostTensor> parseNpy(std::string_view bytes, const std::string &name);
/// Writes `tensor` as a C-order .npy file (format 1.0).
Expected<void> writeNpy(const std::string &path, const HostTensor &tensor);

} // namespace kiln

#endif
