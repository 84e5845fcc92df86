//===- Module.h - what the parts of the kiln extension share ----*- C++ -*-===//
#ifndef KILN_PYTHON_MODULE_H
#define KILN_PYTHON_MODULE_H

#include "kiln/backend/Backend.h"

#include <pybind11/pybind11.h>

namespace kiln::python {

/// A kiln error on its way to Python, where it becomes the exception class
/// of its kind (kiln.InvalidArgument, ...).
struct KilnException {
  Error error;
};

template <typename T> T unwrap(Expected<T> value) {
  if (!value)
    throw KilnException{std::move(value.error())};
  if constexpr (!std::is_void_v<T>)
    return std::move(*value);
}

/// Sets the Python exception of `error`'s kind (kiln.InvalidArgument, ...).
void setPythonError(const Error &error);

/// NumPy's name of a dtype ("float32", "bool") and back.
std::string_view numpyName(DType type);
DType dtypeFromNumpyName(std::string_view name);

/// The process's backend of `device` ("cpu", "cuda:1").
std::shared_ptr<Backend> backendOf(const DeviceId &device);
std::shared_ptr<Backend> backendOf(std::string_view device);

/// kiln.distributed's communicators and collectives (Distributed.cpp).
void bindDistributed(pybind11::module_ &m);

/// __dlpack__, __dlpack_device__ and from_dlpack (DLPack.cpp).
void bindDLPack(pybind11::module_ &m, pybind11::class_<Tensor> &tensor);

} // namespace kiln::python

#endif
