//===- Sha256.h - SHA-256 digests -------------------------------*- C++ -*-===//
//
// The disk cache's digest (FIPS 180-4). A cryptographic hash, not a checksum:
// besides torn writes and bit rot it catches a payload moved from another
// entry, and its hex form names entry files without collisions.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_COMMON_SHA256_H
#define KILN_RUNTIME_COMMON_SHA256_H

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace kiln {

class Sha256 {
public:
  using Digest = std::array<uint8_t, 32>;
  Sha256();
  Sha256 &update(std::string_view bytes);
  Digest finish();
  /// The digest of `bytes` in one call.
  static Digest of(std::string_view bytes) { return Sha256().update(bytes).finish(); }
  static std::string hex(const Digest &digest);

private:
  void compress(const uint8_t *block);
  std::array<uint32_t, 8> state;
  std::array<uint8_t, 64> buffer;
  uint64_t length = 0; // bytes seen
};

} // namespace kiln

#endif
