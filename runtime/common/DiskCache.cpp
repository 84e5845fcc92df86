//===- DiskCache.cpp - compiled kernels kept on disk ----------------------===//
#include "kiln/runtime/common/DiskCache.h"
#include "kiln/runtime/common/Sha256.h"
#include "kiln/runtime/common/Switch.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

namespace kiln {
namespace fs = std::filesystem;

namespace {
constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'K', 'C', 'E', '\0'};
// magic, schema version (u32), key length (u32), payload length (u64), digest.
constexpr size_t kDigestOffset = 24, kHeaderBytes = kDigestOffset + 32;

template <typename T> void putLE(std::string &out, T value) {
  for (size_t i = 0; i < sizeof(T); ++i)
    out.push_back(static_cast<char>(static_cast<uint64_t>(value) >> (8 * i)));
}

/// Reads little-endian numbers and byte strings, refusing to run past the end.
struct Reader {
  std::string_view bytes;
  size_t at = 0;
  template <typename T> std::optional<T> number() {
    if (bytes.size() - at < sizeof(T))
      return std::nullopt;
    uint64_t value = 0;
    for (size_t i = 0; i < sizeof(T); ++i)
      value |= uint64_t(static_cast<uint8_t>(bytes[at + i])) << (8 * i);
    at += sizeof(T);
    return static_cast<T>(value);
  }
  std::optional<std::string_view> take(uint64_t n) {
    if (bytes.size() - at < n)
      return std::nullopt;
    std::string_view part = bytes.substr(at, n);
    at += n;
    return part;
  }
};

/// The digest covers the version, both lengths, the key and the payload.
Sha256::Digest digestOf(std::string_view file) {
  return Sha256()
      .update(file.substr(sizeof kMagic, kDigestOffset - sizeof kMagic))
      .update(file.substr(kHeaderBytes))
      .finish();
}

std::unexpected<Error> corrupt(const std::string &why) {
  return makeError(ErrorKind::InvalidArgument, why);
}

/// Each bad file is reported once per process, however often it is read.
void reportOnce(const fs::path &path, const std::string &why) {
  static std::mutex mutex;
  static std::set<std::string> reported;
  std::lock_guard lock(mutex);
  if (reported.insert(path.string()).second)
    std::fprintf(stderr, "kiln: disk cache: ignoring %s: %s (it is rebuilt)\n",
                 path.c_str(), why.c_str());
}

Expected<uint64_t> parseByteCount(std::string_view text) {
  uint64_t value = 0, scale = 1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  std::string_view suffix(end, text.data() + text.size());
  if (suffix == "K" || suffix == "k") scale = 1ull << 10;
  else if (suffix == "M" || suffix == "m") scale = 1ull << 20;
  else if (suffix == "G" || suffix == "g") scale = 1ull << 30;
  else if (!suffix.empty()) ec = std::errc::invalid_argument;
  if (ec != std::errc() || end == text.data() || value > UINT64_MAX / scale)
    return makeError(ErrorKind::InvalidArgument,
                     "KILN_CACHE_MAX_BYTES: expected a byte count such as 500000000 or "
                     "512M, got '" + std::string(text) + "'");
  return value * scale;
}
} // namespace

std::string encodeCacheEntry(const CacheEntry &entry) {
  std::string payload;
  putLE<uint32_t>(payload, entry.metadata.size());
  payload += entry.metadata;
  putLE<uint32_t>(payload, entry.blobs.size());
  for (const std::string &blob : entry.blobs) {
    putLE<uint64_t>(payload, blob.size());
    payload += blob;
  }
  std::string file(kMagic, sizeof kMagic);
  putLE<uint32_t>(file, kCacheSchemaVersion);
  putLE<uint32_t>(file, entry.key.size());
  putLE<uint64_t>(file, payload.size());
  file.append(32, '\0');
  file += entry.key;
  file += payload;
  Sha256::Digest digest = digestOf(file);
  std::memcpy(file.data() + kDigestOffset, digest.data(), digest.size());
  return file;
}

Expected<CacheEntry> decodeCacheEntry(std::string_view bytes) {
  Reader in{bytes};
  auto magic = in.take(sizeof kMagic);
  if (!magic || *magic != std::string_view(kMagic, sizeof kMagic))
    return corrupt("not a kiln cache entry (bad magic)");
  auto version = in.number<uint32_t>();
  auto keyBytes = in.number<uint32_t>();
  auto payloadBytes = in.number<uint64_t>();
  if (!version || !keyBytes || !payloadBytes || bytes.size() < kHeaderBytes)
    return corrupt("truncated header");
  if (*version != kCacheSchemaVersion)
    return corrupt("schema version " + std::to_string(*version) + ", this kiln reads " +
                   std::to_string(kCacheSchemaVersion));
  if (bytes.size() - kHeaderBytes != uint64_t(*keyBytes) + *payloadBytes)
    return corrupt("size " + std::to_string(bytes.size()) + " bytes, the header says " +
                   std::to_string(kHeaderBytes + uint64_t(*keyBytes) + *payloadBytes) +
                   " (truncated or torn)");
  Sha256::Digest digest = digestOf(bytes);
  if (std::memcmp(digest.data(), bytes.data() + kDigestOffset, digest.size()) != 0)
    return corrupt("digest mismatch (corrupt)");
  in.at = kHeaderBytes;
  CacheEntry entry;
  entry.key = *in.take(*keyBytes);
  // The digest matched, so a malformed payload was written malformed.
  auto metadataBytes = in.number<uint32_t>();
  auto metadata = metadataBytes ? in.take(*metadataBytes) : std::nullopt;
  auto blobCount = in.number<uint32_t>();
  if (!metadata || !blobCount)
    return corrupt("malformed payload");
  entry.metadata = *metadata;
  for (uint32_t i = 0; i < *blobCount; ++i) {
    auto blobBytes = in.number<uint64_t>();
    auto blob = blobBytes ? in.take(*blobBytes) : std::nullopt;
    if (!blob)
      return corrupt("malformed payload (blob " + std::to_string(i) + ")");
    entry.blobs.emplace_back(*blob);
  }
  if (in.at != bytes.size())
    return corrupt("malformed payload (trailing bytes)");
  return entry;
}

Expected<DiskCacheConfig> DiskCacheConfig::fromEnvironment() {
  DiskCacheConfig config;
  auto env = [](const char *name) -> std::optional<std::string> {
    const char *value = std::getenv(name);
    return value ? std::optional<std::string>(value) : std::nullopt;
  };
  if (auto dir = env("KILN_CACHE_DIR"))
    config.root = *dir;
  else if (auto xdg = env("XDG_CACHE_HOME"); xdg && fs::path(*xdg).is_absolute())
    config.root = fs::path(*xdg) / "kiln";
  else if (auto home = env("HOME"); home && !home->empty())
    config.root = fs::path(*home) / ".cache" / "kiln";
  if (auto max = env("KILN_CACHE_MAX_BYTES"); max && !max->empty()) {
    auto bytes = parseByteCount(*max);
    if (!bytes)
      return std::unexpected(bytes.error());
    config.maxBytes = *bytes;
  }
  config.explain = switchSetting("KILN_CACHE_EXPLAIN", false);
  return config;
}

std::string cacheDirectoryName(std::string_view fingerprint) {
  std::string name;
  for (char c : fingerprint)
    name += std::isalnum(static_cast<unsigned char>(c)) || std::strchr("+-_.", c) ? c : '_';
  if (name != fingerprint || name.empty() || name[0] == '.' || name.size() > 80)
    name = name.substr(0, 60) + "-" +
           Sha256::hex(Sha256::of(fingerprint)).substr(0, 16);
  if (name[0] == '.')
    name[0] = '_';
  return name;
}

std::optional<std::string> readCacheFile(const fs::path &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return std::nullopt;
  std::string bytes;
  struct stat info;
  if (::fstat(fd, &info) == 0 && S_ISREG(info.st_mode)) {
    bytes.resize(info.st_size);
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
      if (n <= 0)
        break;
      done += n;
    }
    bytes.resize(done); // a short read is a truncated entry, found by decode
  }
  ::close(fd);
  return bytes;
}

DiskCache::DiskCache(DiskCacheConfig config, std::string buildId)
    : config(std::move(config)), buildId(std::move(buildId)) {
  // A read-only directory only reads, without a word; a root that is (or
  // is under) a file is a mistake worth one: nothing is cached at all.
  std::error_code ec;
  fs::path existing = this->config.root;
  while (existing.has_relative_path() && !fs::exists(existing, ec))
    existing = existing.parent_path();
  if (enabled() && fs::exists(existing, ec) && !fs::is_directory(existing, ec)) {
    static std::once_flag warned;
    std::call_once(warned, [&] {
      std::string what = existing == this->config.root
                             ? " is not a directory"
                             : " is under " + existing.string() + ", which is not a directory";
      std::fprintf(stderr, "kiln: disk cache: %s%s: kernels are not cached\n",
                   this->config.root.c_str(), what.c_str());
    });
    this->config.root.clear();
  }
}

fs::path DiskCache::directoryOf(std::string_view target) const {
  return config.root / cacheDirectoryName(buildId) / cacheDirectoryName(target);
}

std::string DiskCache::keyText(const CacheKey &key) const {
  std::string text = "build=" + buildId + "\ntarget=" + key.target + "\n";
  for (const auto &[name, value] : key.parts)
    text += name + "=" + value + "\n";
  return text;
}

fs::path DiskCache::pathOf(const CacheKey &key) const {
  return directoryOf(key.target) /
         (Sha256::hex(Sha256::of(keyText(key))) + std::string(kCacheEntrySuffix));
}

std::optional<CacheEntry> DiskCache::loadFile(const fs::path &path,
                                              const std::string &keyText, int aliasDepth) {
  auto explain = [&](const std::string &why) {
    if (config.explain)
      std::fprintf(stderr, "kiln: disk cache miss (%s): %s\n%s", why.c_str(), path.c_str(),
                   keyText.c_str());
    return std::nullopt;
  };
  auto bytes = readCacheFile(path);
  if (!bytes)
    return explain("no entry");
  auto entry = decodeCacheEntry(*bytes);
  if (entry && entry->key != keyText)
    entry = corrupt("its key is another program's or another target's");
  if (!entry) {
    reportOnce(path, entry.error().message);
    return explain(entry.error().message);
  }
  auto metadata = nlohmann::json::parse(entry->metadata, nullptr, false);
  if (metadata.is_discarded()) {
    reportOnce(path, "its metadata is not JSON");
    return explain("metadata is not JSON");
  }
  // A hit is recent use, for eviction; a read-only directory keeps its times.
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);
  if (metadata.is_object() && metadata.contains("alias_of")) {
    if (aliasDepth > 0 || !metadata["alias_of"].is_string()) {
      reportOnce(path, "an alias of an alias");
      return explain("bad alias");
    }
    std::string target = metadata["alias_of"];
    return loadFile(path.parent_path() /
                        (Sha256::hex(Sha256::of(target)) + std::string(kCacheEntrySuffix)),
                    target, aliasDepth + 1);
  }
  return std::move(*entry);
}

std::optional<CacheEntry> DiskCache::load(const CacheKey &key) {
  if (!enabled())
    return std::nullopt;
  return loadFile(pathOf(key), keyText(key), 0);
}

bool DiskCache::publish(const fs::path &path, const std::string &bytes) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec)
    return false; // read-only or unusable: the cache only reads
  static std::atomic<uint64_t> counter = 0;
  fs::path temp = path.string() + ".tmp-" + std::to_string(::getpid()) + "-" +
                  std::to_string(counter++);
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    return false;
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0)
      break;
    done += n;
  }
  // Data reaches the disk before the name does, so a crash leaves the old
  // entry or the new one; a torn file would still fail its digest.
  bool written = done == bytes.size() && ::fsync(fd) == 0;
  ::close(fd);
  if (!written || ::rename(temp.c_str(), path.c_str()) != 0) {
    ::unlink(temp.c_str());
    return false;
  }
  if (config.maxBytes)
    evict(config.root, config.maxBytes);
  return true;
}

std::optional<std::pair<std::string, std::string>> buildAndTargetOf(std::string_view text) {
  auto line = [&](std::string_view name) -> std::optional<std::string> {
    if (!text.starts_with(name) || text.find('\n') == std::string_view::npos)
      return std::nullopt;
    std::string value(text.substr(name.size(), text.find('\n') - name.size()));
    text.remove_prefix(text.find('\n') + 1);
    return value;
  };
  auto build = line("build=");
  auto target = build ? line("target=") : std::nullopt;
  if (!target)
    return std::nullopt;
  return std::pair(*build, *target);
}

Expected<CacheEntry> verifyCacheFile(const fs::path &path) {
  auto bytes = readCacheFile(path);
  if (!bytes)
    return corrupt("cannot be read");
  auto entry = decodeCacheEntry(*bytes);
  if (!entry)
    return entry;
  auto names = buildAndTargetOf(entry->key);
  if (!names)
    return corrupt("its key names no build and target");
  if (path.filename() != Sha256::hex(Sha256::of(entry->key)) + std::string(kCacheEntrySuffix) ||
      path.parent_path().filename() != cacheDirectoryName(names->second) ||
      path.parent_path().parent_path().filename() != cacheDirectoryName(names->first))
    return corrupt("it is not where its key puts it (moved from another entry or target)");
  return entry;
}

Expected<void> DiskCache::storeEntry(const CacheEntry &entry) {
  auto names = buildAndTargetOf(entry.key);
  if (!names)
    return corrupt("its key names no build and target");
  if (names->first != buildId)
    return corrupt("written by kiln build " + names->first + ", this is " + buildId);
  fs::path path = directoryOf(names->second) /
                  (Sha256::hex(Sha256::of(entry.key)) + std::string(kCacheEntrySuffix));
  if (!publish(path, encodeCacheEntry(entry)))
    return makeError(ErrorKind::InvalidArgument, "cannot write " + path.string());
  return {};
}

void DiskCache::store(const CacheKey &key, std::string metadata,
                      std::vector<std::string> blobs) {
  if (!enabled())
    return;
  CacheEntry entry{keyText(key), std::move(metadata), std::move(blobs)};
  publish(pathOf(key), encodeCacheEntry(entry));
}

void DiskCache::reportBad(const CacheKey &key, const std::string &why) const {
  reportOnce(pathOf(key), why);
}

void DiskCache::storeAlias(const CacheKey &alias, const std::string &entryKeyText) {
  if (!enabled())
    return;
  nlohmann::json metadata = {{"alias_of", entryKeyText}};
  CacheEntry file{keyText(alias), metadata.dump(), {}};
  publish(pathOf(alias), encodeCacheEntry(file));
}

void DiskCache::evict(const fs::path &root, uint64_t maxBytes) {
  struct File {
    fs::file_time_type used;
    uint64_t bytes;
    fs::path path;
  };
  std::vector<File> files;
  uint64_t total = 0;
  std::error_code ec;
  // Files may vanish under us (other processes evict too): skip them.
  for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it->path().extension() != kCacheEntrySuffix)
      continue;
    std::error_code fileEc;
    uint64_t bytes = it->file_size(fileEc);
    auto used = it->last_write_time(fileEc);
    if (fileEc)
      continue;
    files.push_back({used, bytes, it->path()});
    total += bytes;
  }
  std::sort(files.begin(), files.end(),
            [](const File &a, const File &b) { return a.used < b.used; });
  // Unlinking never disturbs a reader: it read the whole file at once, or
  // reads it through its open descriptor.
  for (const File &f : files) {
    if (total <= maxBytes)
      break;
    if (fs::remove(f.path, ec))
      total -= f.bytes;
  }
}

} // namespace kiln
