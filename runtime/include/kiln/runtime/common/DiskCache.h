//===- DiskCache.h - compiled kernels kept on disk --------------*- C++ -*-===//
//
// The persistent kernel cache (docs/caches.md): one file per entry under
// ROOT/BUILD_ID/TARGET/, named by the SHA-256 of the entry's full key text.
// A file is a header (magic, schema version, key length, payload length,
// SHA-256 of key and payload), the key text, then the payload: JSON
// metadata and binary blobs. Entries are published by one rename of a
// temporary file in the same directory, so readers see a whole entry or
// none; every read checks the digest and the key, and anything wrong is
// reported once per process, ignored and rebuilt by the caller. MLIR-free.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_COMMON_DISKCACHE_H
#define KILN_RUNTIME_COMMON_DISKCACHE_H

#include "kiln/runtime/common/Error.h"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln {

/// What a cached binary depends on. `target` (a device fingerprint such as
/// "cuda-sm_90") names the entry's directory; the parts are everything else
/// (program text, options), in order.
struct CacheKey {
  std::string target;
  std::vector<std::pair<std::string, std::string>> parts;
};

/// One decoded entry.
struct CacheEntry {
  std::string key;                // full key text (build, target, parts)
  std::string metadata;           // JSON
  std::vector<std::string> blobs; // binaries: object file, cubins, SPIR-V, ...
};

/// The bytes of an entry file, and back. decode checks everything a reader
/// must (magic, schema version, lengths, digest) and says what is wrong.
std::string encodeCacheEntry(const CacheEntry &entry);
Expected<CacheEntry> decodeCacheEntry(std::string_view bytes);
/// Bumped whenever the file layout changes: older files are foreign.
constexpr uint32_t kCacheSchemaVersion = 1;
/// Entry files end in this; temporary files add ".tmp-<pid>-<n>".
constexpr std::string_view kCacheEntrySuffix = ".kce";

struct DiskCacheConfig {
  std::filesystem::path root; // empty: no disk cache
  uint64_t maxBytes = 0;      // 0: no cap
  bool explain = false;       // log every miss with its key parts
  /// KILN_CACHE_DIR (unset: $XDG_CACHE_HOME/kiln, else ~/.cache/kiln;
  /// empty: off), KILN_CACHE_MAX_BYTES (bytes, or with a K, M or G suffix),
  /// KILN_CACHE_EXPLAIN=1. A malformed value is an InvalidArgument error.
  static Expected<DiskCacheConfig> fromEnvironment();
};

class DiskCache {
public:
  /// `buildId` identifies the kiln build that wrote the entries (see
  /// kiln/BuildId.h): entries of other builds are never read.
  DiskCache(DiskCacheConfig config, std::string buildId);
  bool enabled() const { return !config.root.empty(); }
  const DiskCacheConfig &settings() const { return config; }

  /// The directory of one target's entries, and the file of one key.
  std::filesystem::path directoryOf(std::string_view target) const;
  std::filesystem::path pathOf(const CacheKey &key) const;
  /// The full key text written in the header.
  std::string keyText(const CacheKey &key) const;

  /// The entry stored under `key`, verified, following an alias to its
  /// entry; nullopt when there is none or it is not trustworthy. A hit
  /// marks the entry recently used.
  std::optional<CacheEntry> load(const CacheKey &key);
  /// Publishes an entry under `key` (best effort: a read-only or full
  /// directory is skipped silently), then evicts down to the cap.
  void store(const CacheKey &key, std::string metadata, std::vector<std::string> blobs);
  /// Reports, once per process, an entry its user found unusable (it is
  /// then rebuilt and overwritten).
  void reportBad(const CacheKey &key, const std::string &why) const;
  /// Publishes `alias` as another name for the entry stored under `entry`
  /// (or whose full key text is `entryKeyText`).
  void storeAlias(const CacheKey &alias, const std::string &entryKeyText);
  void storeAlias(const CacheKey &alias, const CacheKey &entry) {
    storeAlias(alias, keyText(entry));
  }

  /// Publishes an entry as it is (an imported one) under its own key, in
  /// this build's namespace; an error when it is another build's, or the
  /// directory cannot be written.
  Expected<void> storeEntry(const CacheEntry &entry);

  /// Deletes the least recently used entries of every build and target
  /// under the root until they take at most `maxBytes`; never one a
  /// reader holds open (it keeps reading its open file).
  static void evict(const std::filesystem::path &root, uint64_t maxBytes);

private:
  std::optional<CacheEntry> loadFile(const std::filesystem::path &path,
                                     const std::string &keyText, int aliasDepth);
  bool publish(const std::filesystem::path &path, const std::string &bytes);
  DiskCacheConfig config;
  std::string buildId;
};

/// Reads a whole entry file at once (a reader never sees a later rename
/// or unlink half-way); nullopt when it cannot be opened.
std::optional<std::string> readCacheFile(const std::filesystem::path &path);
/// Decodes the entry file at `path` and checks that it sits where its key
/// puts it (build and target directories, file name): what every reader
/// trusts, for `kiln-cache verify`.
Expected<CacheEntry> verifyCacheFile(const std::filesystem::path &path);
/// The build id and the target a key text names.
std::optional<std::pair<std::string, std::string>> buildAndTargetOf(std::string_view keyText);
/// A directory name for a fingerprint: its safe characters, and a digest
/// when anything was changed or cut.
std::string cacheDirectoryName(std::string_view fingerprint);

} // namespace kiln

#endif
