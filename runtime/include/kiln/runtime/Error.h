//===- Error.h - kiln's error type ------------------------------*- C++ -*-===//
#ifndef KILN_RUNTIME_ERROR_H
#define KILN_RUNTIME_ERROR_H

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

const char *errorKindName(ErrorKind kind);

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
