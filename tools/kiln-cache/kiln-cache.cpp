//===- kiln-cache.cpp - manage kiln's disk kernel cache ------------------===//
//
// kiln-cache [--dir DIR] stats|list|verify|prune|clear|export FILE|import FILE
// The directory is KILN_CACHE_DIR's (docs/caches.md) unless --dir names one.
// Exit 0 on success, 2 for bad usage or bad input (with a message), 1 when
// verify finds bad entries or the cache cannot be changed.
//
//===----------------------------------------------------------------------===//
#include "kiln/BuildId.h"
#include "kiln/runtime/common/DiskCache.h"
#include "kiln/runtime/common/TuneDatabase.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>

using namespace kiln;
namespace fs = std::filesystem;

namespace {

constexpr const char *kUsage =
    "usage: kiln-cache [--dir DIR] COMMAND\n"
    "  stats        entries and bytes per build and target\n"
    "  list         every entry: size, last use, key\n"
    "  verify       check every entry's digest and place; exit 1 if any is bad\n"
    "  prune        delete bad entries, other builds' entries, abandoned temporary\n"
    "               files, and the least recently used beyond KILN_CACHE_MAX_BYTES\n"
    "  clear        delete every entry\n"
    "  export FILE  write this build's entries and the tune files into a bundle FILE\n"
    "  import FILE  add a bundle's entries and tune files (each verified) to the cache\n";

// A bundle: a magic, then records. Version 2 (written): per record a kind
// byte (kEntryRecord: an entry file's bytes; kTuneRecord: a tune file's
// JSON), its byte count (u64, little-endian) and the bytes. Version 1 (read
// only): entries alone, no kind byte.
constexpr std::string_view kBundleMagicPrefix = "KILNBUNDLE";
constexpr char kBundleVersion = '2';
constexpr char kEntryRecord = 'E', kTuneRecord = 'T';

struct UsageError {
  std::string message;
};

/// A file the cache owns: an entry or a writer's temporary file.
struct CacheFile {
  fs::path path;
  bool temporary;
};

std::vector<CacheFile> cacheFiles(const fs::path &root) {
  std::vector<CacheFile> files;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    bool entry = it->path().extension() == kCacheEntrySuffix;
    bool temporary = name.find(std::string(kCacheEntrySuffix) + ".tmp-") != std::string::npos;
    if ((entry || temporary) && it->is_regular_file(ec))
      files.push_back({it->path(), temporary});
  }
  std::sort(files.begin(), files.end(),
            [](const CacheFile &a, const CacheFile &b) { return a.path < b.path; });
  return files;
}

/// The tune files under the cache (docs/autotune.md), one per device.
std::vector<fs::path> tuneFiles(const fs::path &root) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (fs::directory_iterator it(tuneDirectoryOf(root), ec), end; !ec && it != end;
       it.increment(ec))
    if (it->path().extension() == ".json" && it->is_regular_file(ec))
      files.push_back(it->path());
  std::sort(files.begin(), files.end());
  return files;
}

uint64_t sizeOf(const fs::path &path) {
  std::error_code ec;
  uint64_t bytes = fs::file_size(path, ec);
  return ec ? 0 : bytes;
}

double ageSeconds(const fs::path &path) {
  std::error_code ec;
  auto time = fs::last_write_time(path, ec);
  if (ec)
    return 0;
  return std::chrono::duration<double>(fs::file_time_type::clock::now() - time).count();
}

/// "BUILD/TARGET" of an entry file, from its place.
std::string namespaceOf(const fs::path &path) {
  return path.parent_path().parent_path().filename().string() + "/" +
         path.parent_path().filename().string();
}

/// One line of a key text's parts, cut short: the program's first line.
std::string describeKey(const std::string &key, const std::string &metadata) {
  if (metadata.find("\"alias_of\"") != std::string::npos)
    return "alias";
  size_t entry = key.find("\nentry=");
  std::string text = entry == std::string::npos
                         ? "?"
                         : key.substr(entry + 7, key.find('\n', entry + 1) - entry - 7);
  size_t kind = metadata.find("\"kind\":\"");
  if (kind != std::string::npos)
    text = metadata.substr(kind + 8, metadata.find('"', kind + 8) - kind - 8) + " @" + text;
  return text;
}

int stats(const DiskCacheConfig &config) {
  struct Totals {
    uint64_t entries = 0, bytes = 0;
  };
  std::map<std::string, Totals> perNamespace;
  Totals temporary;
  for (const CacheFile &f : cacheFiles(config.root)) {
    Totals &t = f.temporary ? temporary : perNamespace[namespaceOf(f.path)];
    ++t.entries;
    t.bytes += sizeOf(f.path);
  }
  std::printf("cache directory: %s\nthis build: %s\ncap: %s\n", config.root.c_str(), kBuildId,
              config.maxBytes ? (std::to_string(config.maxBytes) + " bytes").c_str()
                              : "none (KILN_CACHE_MAX_BYTES unset)");
  Totals all;
  for (const auto &[name, t] : perNamespace) {
    bool current = name.starts_with(cacheDirectoryName(kBuildId) + "/");
    std::printf("  %-60s %6llu entries %12llu bytes%s\n", name.c_str(),
                (unsigned long long)t.entries, (unsigned long long)t.bytes,
                current ? "" : "  (another build: prune deletes)");
    all.entries += t.entries;
    all.bytes += t.bytes;
  }
  std::printf("total: %llu entries, %llu bytes", (unsigned long long)all.entries,
              (unsigned long long)all.bytes);
  if (temporary.entries)
    std::printf("; %llu temporary files of unfinished writes", (unsigned long long)temporary.entries);
  std::printf("\n");
  for (const fs::path &file : tuneFiles(config.root)) {
    auto db = TuneDatabase::read(file);
    std::printf("tune file %s: %s\n", file.c_str(),
                db ? (std::to_string(db->entries().size()) + " entries for " + db->device()).c_str()
                   : ("BAD: " + db.error().message).c_str());
  }
  return 0;
}

int list(const DiskCacheConfig &config) {
  for (const CacheFile &f : cacheFiles(config.root)) {
    if (f.temporary)
      continue;
    auto entry = verifyCacheFile(f.path);
    std::printf("%s/%s %llu bytes, used %.0fs ago: %s\n", namespaceOf(f.path).c_str(),
                f.path.filename().c_str(), (unsigned long long)sizeOf(f.path), ageSeconds(f.path),
                entry ? describeKey(entry->key, entry->metadata).c_str()
                      : ("BAD: " + entry.error().message).c_str());
  }
  return 0;
}

int verify(const DiskCacheConfig &config) {
  size_t good = 0, bad = 0;
  for (const CacheFile &f : cacheFiles(config.root)) {
    if (f.temporary)
      continue;
    if (auto entry = verifyCacheFile(f.path); entry) {
      ++good;
    } else {
      ++bad;
      std::printf("bad: %s: %s\n", f.path.c_str(), entry.error().message.c_str());
    }
  }
  size_t goodTune = 0, badTune = 0;
  for (const fs::path &file : tuneFiles(config.root)) {
    if (auto db = TuneDatabase::read(file); db) {
      ++goodTune;
    } else {
      ++badTune;
      std::printf("bad: %s\n", db.error().message.c_str());
    }
  }
  std::printf("%zu entries verified, %zu bad; %zu tune files verified, %zu bad\n", good, bad,
              goodTune, badTune);
  return bad || badTune ? 1 : 0;
}

/// Deletes the cache's files for which `doomed` says so, then the empty
/// directories left; the count deleted.
template <typename Doomed> size_t removeFiles(const fs::path &root, Doomed doomed) {
  size_t removed = 0;
  std::error_code ec;
  for (const CacheFile &f : cacheFiles(root))
    if (doomed(f) && fs::remove(f.path, ec))
      ++removed;
  std::vector<fs::path> dirs;
  for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_directory(ec))
      dirs.push_back(it->path());
  std::sort(dirs.rbegin(), dirs.rend()); // children first
  for (const fs::path &d : dirs)
    if (fs::is_empty(d, ec))
      fs::remove(d, ec);
  return removed;
}

int prune(const DiskCacheConfig &config) {
  std::string current = cacheDirectoryName(kBuildId);
  // A temporary file this old is a killed writer's: writes take seconds.
  constexpr double kAbandonedSeconds = 3600;
  size_t removed = removeFiles(config.root, [&](const CacheFile &f) {
    if (f.temporary)
      return ageSeconds(f.path) > kAbandonedSeconds;
    return f.path.parent_path().parent_path().filename() != current ||
           !verifyCacheFile(f.path);
  });
  uint64_t before = 0;
  for (const CacheFile &f : cacheFiles(config.root))
    before += sizeOf(f.path);
  if (config.maxBytes)
    DiskCache::evict(config.root, config.maxBytes);
  uint64_t after = 0;
  for (const CacheFile &f : cacheFiles(config.root))
    after += sizeOf(f.path);
  std::printf("pruned %zu bad, foreign or abandoned files; evicted %llu bytes; %llu bytes left\n",
              removed, (unsigned long long)(before - after), (unsigned long long)after);
  return 0;
}

int clear(const DiskCacheConfig &config) {
  size_t removed = removeFiles(config.root, [](const CacheFile &) { return true; });
  std::printf("deleted %zu files\n", removed);
  return 0;
}

int exportBundle(const DiskCacheConfig &config, const std::string &file) {
  std::string bundle = std::string(kBundleMagicPrefix) + kBundleVersion + "\n";
  auto record = [&](char kind, std::string_view bytes) {
    bundle.push_back(kind);
    for (int i = 0; i < 8; ++i)
      bundle.push_back(static_cast<char>(uint64_t(bytes.size()) >> (8 * i)));
    bundle += bytes;
  };
  size_t entries = 0, tunes = 0;
  fs::path namespaceDir = config.root / cacheDirectoryName(kBuildId);
  for (const CacheFile &f : cacheFiles(namespaceDir)) {
    auto bytes = readCacheFile(f.path);
    if (f.temporary || !bytes || !verifyCacheFile(f.path))
      continue;
    record(kEntryRecord, *bytes);
    ++entries;
  }
  for (const fs::path &tuneFile : tuneFiles(config.root)) {
    auto text = readCacheFile(tuneFile);
    auto db = text ? TuneDatabase::parse(*text, tuneFile.string())
                   : makeError(ErrorKind::InvalidArgument, tuneFile.string() + ": cannot read");
    if (!db) {
      std::fprintf(stderr, "kiln-cache: not exported: %s\n", db.error().message.c_str());
      continue;
    }
    if (tuneFile != tuneFileOf(tuneDirectoryOf(config.root), db->device()))
      continue; // not the file of its device: kiln never reads it
    record(kTuneRecord, *text);
    ++tunes;
  }
  std::ofstream out(file, std::ios::binary);
  out.write(bundle.data(), static_cast<std::streamsize>(bundle.size()));
  out.close();
  if (!out) {
    std::fprintf(stderr, "kiln-cache: cannot write %s\n", file.c_str());
    return 1;
  }
  std::printf("exported %zu entries and %zu tune files (%zu bytes) to %s\n", entries, tunes,
              bundle.size(), file.c_str());
  return 0;
}

int importBundle(const DiskCacheConfig &config, const std::string &file) {
  auto bytes = readCacheFile(file);
  if (!bytes)
    throw UsageError{"cannot read " + file};
  std::string_view rest(*bytes);
  char version = rest.size() > kBundleMagicPrefix.size() + 1 &&
                         rest.starts_with(kBundleMagicPrefix) &&
                         rest[kBundleMagicPrefix.size() + 1] == '\n'
                     ? rest[kBundleMagicPrefix.size()]
                     : 0;
  if (version != '1' && version != kBundleVersion)
    throw UsageError{file + ": not a kiln cache bundle" +
                     (version ? std::string(" of a version this kiln reads") : "")};
  rest.remove_prefix(kBundleMagicPrefix.size() + 2);
  DiskCache cache(config, kBuildId);
  size_t entries = 0, tunes = 0, refused = 0;
  for (size_t index = 0; !rest.empty(); ++index) {
    char kind = kEntryRecord;
    if (version != '1') {
      kind = rest.front();
      rest.remove_prefix(1);
    }
    uint64_t size = 0;
    for (int i = 0; i < 8 && i < static_cast<int>(rest.size()); ++i)
      size |= uint64_t(static_cast<uint8_t>(rest[i])) << (8 * i);
    if (rest.size() < 8 || rest.size() - 8 < size)
      throw UsageError{file + ": truncated at record #" + std::to_string(index)};
    std::string_view payload = rest.substr(8, size);
    rest.remove_prefix(8 + size);
    std::string name = file + " record #" + std::to_string(index);
    Expected<void> stored;
    if (kind == kEntryRecord) {
      auto entry = decodeCacheEntry(payload);
      stored = entry ? cache.storeEntry(*entry) : Expected<void>(std::unexpected(entry.error()));
      entries += stored.has_value();
    } else if (kind == kTuneRecord) {
      auto db = TuneDatabase::parse(payload, "tune file");
      // Entries the cache has already win: they were measured here.
      stored = db ? db->write(tuneFileOf(tuneDirectoryOf(config.root), db->device()),
                              TuneDatabase::OnSameKey::Keep)
                  : Expected<void>(std::unexpected(db.error()));
      tunes += stored.has_value();
    } else {
      stored = makeError(ErrorKind::InvalidArgument, "unknown record kind");
    }
    if (!stored) {
      ++refused;
      std::fprintf(stderr, "kiln-cache: %s refused: %s\n", name.c_str(),
                   stored.error().message.c_str());
    }
  }
  std::printf("imported %zu entries and %zu tune files into %s, refused %zu\n", entries, tunes,
              config.root.c_str(), refused);
  return refused ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
  try {
    auto config = DiskCacheConfig::fromEnvironment();
    if (!config)
      throw UsageError{config.error().message};
    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.size() >= 2 && args[0] == "--dir") {
      config->root = args[1];
      args.erase(args.begin(), args.begin() + 2);
    }
    if (args.size() == 1 && (args[0] == "-h" || args[0] == "--help")) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (args.empty())
      throw UsageError{"no command"};
    if (config->root.empty())
      throw UsageError{"the disk cache is off (KILN_CACHE_DIR is empty); name one with --dir"};
    const std::string &command = args[0];
    bool takesFile = command == "export" || command == "import";
    if (args.size() != (takesFile ? 2u : 1u))
      throw UsageError{takesFile ? command + " needs one FILE" : command + " takes no argument"};
    if (command == "stats") return stats(*config);
    if (command == "list") return list(*config);
    if (command == "verify") return verify(*config);
    if (command == "prune") return prune(*config);
    if (command == "clear") return clear(*config);
    if (command == "export") return exportBundle(*config, args[1]);
    if (command == "import") return importBundle(*config, args[1]);
    throw UsageError{"unknown command '" + command + "'"};
  } catch (const UsageError &e) {
    std::fprintf(stderr, "kiln-cache: %s\n%s", e.message.c_str(), kUsage);
    return 2;
  }
}
