//===- OpKey.h - lookup keys of eager ops, built without allocating -*- C++ -*-===//
//
// An eager op looks up two caches per call: its result type by signature
// (ops::call) and its program by signature and result (Backend::apply).
// Their keys are built in the caller's stack frame and the maps are
// searched by view, so a repeated op allocates nothing to find its
// entries. Keys are length-prefixed and dims raw, so no two signatures
// spell the same key.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_BACKEND_OPKEY_H
#define KILN_BACKEND_OPKEY_H

#include "kiln/runtime/common/DType.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory_resource>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kiln {

/// A key being built: on the stack while it fits (a thread-local buffer
/// would cost more than it saves: from the Python extension every access
/// is a call into the dynamic loader).
class OpKey {
public:
  OpKey() { key.reserve(kInline); }
  OpKey(const OpKey &) = delete;
  OpKey &operator=(const OpKey &) = delete;

  /// `text` (an op name, attributes), prefixed by its length.
  void appendText(std::string_view text) {
    appendSize(text.size());
    key += text;
  }
  /// A tensor type: its dtype, rank and dims.
  void appendType(DType type, const std::vector<int64_t> &shape) {
    key += static_cast<char>(type);
    appendSize(shape.size());
    key.append(reinterpret_cast<const char *>(shape.data()), shape.size() * sizeof(int64_t));
  }
  void appendByte(char byte) { key += byte; }
  std::string_view view() const { return key; }

  /// Hashes keys and views alike, for lookups by view.
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view key) const { return std::hash<std::string_view>{}(key); }
  };
  template <typename Value>
  using Map = std::unordered_map<std::string, Value, Hash, std::equal_to<>>;

private:
  void appendSize(uint64_t size) {
    key.append(reinterpret_cast<const char *>(&size), sizeof size);
  }

  static constexpr size_t kInline = 256; // most keys; longer ones go to the heap
  alignas(std::max_align_t) std::byte storage[kInline + 64];
  std::pmr::monotonic_buffer_resource arena{storage, sizeof storage};
  std::pmr::string key{&arena};
};

} // namespace kiln

#endif
