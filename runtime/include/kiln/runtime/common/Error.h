//===- Error.h - kiln's error type ------------------------------*- C++ -*-===//
//
// Header-only: part of the compiler<->runtime contract (with DType.h and
// GpuPlan.h), so the compiler uses it without linking the runtime.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_COMMON_ERROR_H
#define KILN_RUNTIME_COMMON_ERROR_H

#include <expected>
#include <string>

namespace kiln {

enum class ErrorKind {
  InvalidArgument, // bad input: malformed program, wrong shapes or files
  Compile,         // lowering or code generation failed
  Launch,          // a kernel could not be run
  OutOfMemory,
  Unsupported,
  DevicePoisoned,
};

inline const char *errorKindName(ErrorKind kind) {
  switch (kind) {
  case ErrorKind::InvalidArgument: return "invalid_argument";
  case ErrorKind::Compile: return "compile";
  case ErrorKind::Launch: return "launch";
  case ErrorKind::OutOfMemory: return "out_of_memory";
  case ErrorKind::Unsupported: return "unsupported";
  case ErrorKind::DevicePoisoned: return "device_poisoned";
  }
  return "error";
}

/// What went wrong and where, in words a user can act on.
struct Error {
  ErrorKind kind;
  std::string message;
};

template <typename T> using Expected = std::expected<T, Error>;

inline std::unexpected<Error> makeError(ErrorKind kind, std::string message) {
  return std::unexpected(Error{kind, std::move(message)});
}

} // namespace kiln

#endif
