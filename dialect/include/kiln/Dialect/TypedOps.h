//===- TypedOps.h - the dialect's checks for typed-op callers ---*- C++ -*-===//
//
// What the backend's typed ops (kiln/backend/Ops.h) need from the dialect,
// in plain C++: no MLIR header reaches their callers.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_DIALECT_TYPEDOPS_H
#define KILN_DIALECT_TYPEDOPS_H

#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

/// A tensor type in plain C++, the element type as kiln spells it ("f32").
struct TensorSpelling {
  std::string element;
  std::vector<int64_t> shape;
};

/// The result type of `op` ("kiln.add") on operands of `operands` with
/// `attrs` (the attribute dictionary's body, "dim = 1 : i64"), its element
/// type replaced by `element` where given, checked by building the op and
/// running its verifier: the result type, or the diagnostics (the
/// verifier's message). For callers without MLIR (the backend's typed
/// ops); thread-safe.
std::expected<TensorSpelling, std::string>
checkTypedOp(std::string_view op, const std::vector<TensorSpelling> &operands,
             std::string_view attrs, std::optional<std::string_view> element);

/// The names of the dialect's registered ops ("kiln.add", ...): what a
/// complete set of typed ops covers.
std::vector<std::string> dialectOpNames();

} // namespace kiln

#endif
