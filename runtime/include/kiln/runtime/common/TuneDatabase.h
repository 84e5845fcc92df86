//===- TuneDatabase.h - JSON tune files -------------------------*- C++ -*-===//
//
// The tune files of one device fingerprint (docs/autotune.md): JSON with a
// format version, written atomically and merged with what another process
// wrote meanwhile; a broken file is an error naming the file and the line.
// MLIR-free; nlohmann-json.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_COMMON_TUNEDATABASE_H
#define KILN_RUNTIME_COMMON_TUNEDATABASE_H

#include "kiln/runtime/common/Error.h"
#include "kiln/runtime/common/Tuning.h"

#include <filesystem>

namespace kiln {

struct TuneTiming {
  std::vector<int64_t> config;
  double median = 0, spread = 0; // milliseconds
};

struct TuneEntry {
  TuneKey key;
  std::vector<std::string> params; // the template's, naming `best`'s values
  std::vector<int64_t> best;
  std::vector<TuneTiming> timings;
  /// The entry with `best`'s and the timings' values in the order `names`
  /// gives (a hand-written file may name the parameters in another);
  /// nullopt where it names other parameters.
  std::optional<TuneEntry> inOrderOf(const std::vector<std::string> &names) const;
};

enum class AutotuneMode { Off, Cached, On };

struct AutotuneConfig {
  AutotuneMode mode = AutotuneMode::Cached;
  double budgetMs = 1000;                         // per key, mode On
  std::filesystem::path directory;                // KILN_CACHE_DIR/tune; empty: none
  std::vector<std::filesystem::path> shippedFiles; // KILN_TUNE_FILE, read-only
  /// KILN_AUTOTUNE, KILN_AUTOTUNE_BUDGET_MS, KILN_CACHE_DIR, KILN_TUNE_FILE;
  /// a malformed value is InvalidArgument.
  static Expected<AutotuneConfig> fromEnvironment();
};

/// The tune entries of one device fingerprint, from files.
class TuneDatabase {
public:
  explicit TuneDatabase(std::string device = {}) : device_(std::move(device)) {}
  const std::string &device() const { return device_; }
  /// The build id of the kiln that wrote the file (information only).
  std::string builtBy;

  /// Parses one file's text; errors name `file` and the line.
  static Expected<TuneDatabase> parse(std::string_view text, const std::string &file);
  static Expected<TuneDatabase> read(const std::filesystem::path &file);
  std::string toJson() const;
  /// Which entry a write keeps where `file` and this database have a key.
  enum class OnSameKey { Replace, Keep };
  /// Writes `file` atomically (temporary file and rename), merged with what
  /// is there now (another process may have written it meanwhile): this
  /// database's entries win, or with Keep the file's. A file there that
  /// does not parse is an error, never replaced.
  Expected<void> write(const std::filesystem::path &file,
                       OnSameKey onSameKey = OnSameKey::Replace) const;

  /// `other`'s entries join this one's, replacing entries of the same key.
  void merge(const TuneDatabase &other);
  void insert(TuneEntry entry);
  /// The entry of `key`, only when its candidates hash is `key`'s.
  const TuneEntry *find(const TuneKey &key) const;
  const std::vector<TuneEntry> &entries() const { return entries_; }
  /// Key text -> best config text, for entries of the given spaces whose
  /// candidates hash and best config are current (others are skipped).
  TuneTable table(const std::vector<TuneSpace> &spaces) const;

private:
  std::string device_;
  std::vector<TuneEntry> entries_;
};

/// The tune files' directory of a disk cache rooted at `cacheRoot`.
std::filesystem::path tuneDirectoryOf(const std::filesystem::path &cacheRoot);
/// The file of `device`'s entries under a tune directory.
std::filesystem::path tuneFileOf(const std::filesystem::path &directory,
                                 std::string_view device);
constexpr int kTuneFormatVersion = 1;

} // namespace kiln

#endif
