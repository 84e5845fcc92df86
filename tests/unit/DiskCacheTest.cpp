//===- DiskCacheTest.cpp - the disk kernel cache's store -----------------===//
#include "kiln/runtime/common/DiskCache.h"
#include "kiln/runtime/common/Sha256.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <random>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace kiln;
namespace fs = std::filesystem;

namespace {
/// A fresh, empty directory per test.
fs::path freshDir(const std::string &name) {
  fs::path dir = fs::temp_directory_path() /
                 ("kiln-disk-cache-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

DiskCache cacheIn(const fs::path &root, uint64_t maxBytes = 0) {
  return DiskCache({root, maxBytes, false}, "test-build");
}

CacheKey keyOf(const std::string &program, const std::string &target = "cpu-test") {
  return {target, {{"entry", "main"}, {"program", program}}};
}

std::string readAll(const fs::path &path) { return *readCacheFile(path); }
void writeAll(const fs::path &path, std::string_view bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// Deterministic contents of the entry for key number `i`, some large
/// enough that a write takes a while.
std::string blobOf(int i) {
  std::string blob((i % 10 == 0 ? 128 << 10 : 4096) + i, '\0');
  for (size_t j = 0; j < blob.size(); ++j)
    blob[j] = static_cast<char>((i * 131 + j * 7) & 0xff);
  return blob;
}
} // namespace

TEST(Sha256, KnownDigests) {
  EXPECT_EQ(Sha256::hex(Sha256::of("")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256::hex(Sha256::of("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256::hex(Sha256::of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // Fed in pieces that straddle blocks: the same digest as in one call.
  std::string million(1000000, 'a');
  Sha256 pieces;
  for (size_t at = 0; at < million.size(); at += 999)
    pieces.update(std::string_view(million).substr(at, 999));
  EXPECT_EQ(Sha256::hex(pieces.finish()),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(DiskCache, RoundTrip) {
  fs::path root = freshDir("roundtrip");
  DiskCache cache = cacheIn(root);
  EXPECT_FALSE(cache.load(keyOf("a")));
  cache.store(keyOf("a"), R"({"kind":"cpu"})", {"object bytes", std::string("\0\1\2", 3)});
  auto entry = cache.load(keyOf("a"));
  ASSERT_TRUE(entry);
  EXPECT_EQ(entry->metadata, R"({"kind":"cpu"})");
  EXPECT_EQ(entry->blobs, (std::vector<std::string>{"object bytes", std::string("\0\1\2", 3)}));
  EXPECT_EQ(entry->key, cache.keyText(keyOf("a")));
  EXPECT_FALSE(cache.load(keyOf("b")));
  EXPECT_FALSE(cache.load(keyOf("a", "cpu-other")));
  // Another build never sees it.
  EXPECT_FALSE(DiskCache({root, 0, false}, "other-build").load(keyOf("a")));
  // An alias leads to the entry.
  cache.storeAlias(keyOf("a2"), keyOf("a"));
  auto aliased = cache.load(keyOf("a2"));
  ASSERT_TRUE(aliased);
  EXPECT_EQ(aliased->blobs, entry->blobs);
  EXPECT_TRUE(verifyCacheFile(cache.pathOf(keyOf("a"))));
}

TEST(DiskCache, EveryFlippedByteIsRefused) {
  fs::path root = freshDir("flip");
  DiskCache cache = cacheIn(root);
  cache.store(keyOf("p"), "{}", {"binary"});
  fs::path path = cache.pathOf(keyOf("p"));
  std::string good = readAll(path);
  for (size_t at = 0; at < good.size(); ++at) {
    std::string bad = good;
    bad[at] ^= 0x10;
    writeAll(path, bad);
    EXPECT_FALSE(cache.load(keyOf("p"))) << "byte " << at << " flipped was loaded";
    EXPECT_FALSE(verifyCacheFile(path)) << "byte " << at;
  }
  // Rebuilt: the next store replaces it.
  cache.store(keyOf("p"), "{}", {"binary"});
  EXPECT_TRUE(cache.load(keyOf("p")));
}

TEST(DiskCache, TruncatedEntriesAreRefused) {
  fs::path root = freshDir("truncate");
  DiskCache cache = cacheIn(root);
  cache.store(keyOf("p"), "{}", {"binary"});
  fs::path path = cache.pathOf(keyOf("p"));
  std::string good = readAll(path);
  for (size_t size = 0; size < good.size(); ++size) {
    writeAll(path, std::string_view(good).substr(0, size));
    EXPECT_FALSE(cache.load(keyOf("p"))) << "cut to " << size;
  }
  writeAll(path, good + "x");
  EXPECT_FALSE(cache.load(keyOf("p")));
}

TEST(DiskCache, ForeignSchemaVersionIsRefused) {
  std::string file = encodeCacheEntry({"build=b\ntarget=t\n", "{}", {"x"}});
  // Version 99 with a digest that matches it: refused for its version.
  file[8] = 99;
  Sha256::Digest digest = Sha256()
                              .update(std::string_view(file).substr(8, 16))
                              .update(std::string_view(file).substr(56))
                              .finish();
  std::memcpy(file.data() + 24, digest.data(), digest.size());
  auto entry = decodeCacheEntry(file);
  ASSERT_FALSE(entry);
  EXPECT_NE(entry.error().message.find("schema version 99"), std::string::npos)
      << entry.error().message;
}

TEST(DiskCache, SwappedEntriesAreRefused) {
  fs::path root = freshDir("swap");
  DiskCache cache = cacheIn(root);
  cache.store(keyOf("a"), "{}", {"binary of a"});
  cache.store(keyOf("b"), "{}", {"binary of b"});
  fs::path a = cache.pathOf(keyOf("a")), b = cache.pathOf(keyOf("b"));
  std::string fileA = readAll(a), fileB = readAll(b);
  // Whole files swapped: each names the other's key.
  writeAll(a, fileB);
  writeAll(b, fileA);
  EXPECT_FALSE(cache.load(keyOf("a")));
  EXPECT_FALSE(cache.load(keyOf("b")));
  // Payloads swapped under the headers and keys: digests fail.
  size_t keyBytes = cache.keyText(keyOf("a")).size();
  writeAll(a, fileA.substr(0, 56 + keyBytes) + fileB.substr(56 + keyBytes));
  EXPECT_FALSE(cache.load(keyOf("a")));
  EXPECT_FALSE(verifyCacheFile(a));
}

TEST(DiskCache, AnotherTargetsEntryIsRefused) {
  fs::path root = freshDir("target");
  DiskCache cache = cacheIn(root);
  cache.store(keyOf("p", "cuda-sm_80"), "{}", {"sm_80 cubin"});
  fs::path there = cache.pathOf(keyOf("p", "cuda-sm_80"));
  fs::path here = cache.pathOf(keyOf("p", "cuda-sm_90"));
  fs::create_directories(here.parent_path());
  fs::copy_file(there, here);
  EXPECT_FALSE(cache.load(keyOf("p", "cuda-sm_90")));
  EXPECT_FALSE(verifyCacheFile(here));
  EXPECT_TRUE(cache.load(keyOf("p", "cuda-sm_80")));
}

TEST(DiskCache, BadEntriesAreReportedOnce) {
  fs::path root = freshDir("report");
  DiskCache cache = cacheIn(root);
  cache.store(keyOf("p"), "{}", {"binary"});
  writeAll(cache.pathOf(keyOf("p")), "garbage");
  testing::internal::CaptureStderr();
  EXPECT_FALSE(cache.load(keyOf("p")));
  EXPECT_FALSE(cache.load(keyOf("p")));
  std::string log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("bad magic"), std::string::npos) << log;
  EXPECT_EQ(log.find("ignoring"), log.rfind("ignoring")) << log;
}

TEST(DiskCache, ExplainLogsMissesWithKeyParts) {
  fs::path root = freshDir("explain");
  DiskCache cache({root, 0, true}, "test-build");
  testing::internal::CaptureStderr();
  EXPECT_FALSE(cache.load(keyOf("the program text")));
  std::string log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("disk cache miss (no entry)"), std::string::npos) << log;
  EXPECT_NE(log.find("program=the program text"), std::string::npos) << log;
  EXPECT_NE(log.find("target=cpu-test"), std::string::npos) << log;
}

// On/off settings read one way (kiln/runtime/common/Switch.h): each had its
// own test, and KILN_CUDA_WGMMA=off left wgmma on.
TEST(DiskCache, ExplainIsAnOnOffSetting) {
  for (const char *on : {"1", "on", "TRUE", "yes"}) {
    ::setenv("KILN_CACHE_EXPLAIN", on, 1);
    EXPECT_TRUE(DiskCacheConfig::fromEnvironment()->explain) << on;
  }
  for (const char *off : {"0", "off", "False", "no", ""}) {
    ::setenv("KILN_CACHE_EXPLAIN", off, 1);
    EXPECT_FALSE(DiskCacheConfig::fromEnvironment()->explain) << off;
  }
  ::setenv("KILN_CACHE_EXPLAIN", "maybe", 1);
  testing::internal::CaptureStderr();
  EXPECT_FALSE(DiskCacheConfig::fromEnvironment()->explain);
  std::string log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("KILN_CACHE_EXPLAIN='maybe': expected 1/on/true/yes or 0/off/false/no"),
            std::string::npos)
      << log;
  ::unsetenv("KILN_CACHE_EXPLAIN");
}

TEST(DiskCache, ConfigFromEnvironment) {
  std::string home = std::getenv("HOME") ? std::getenv("HOME") : "";
  ::setenv("KILN_CACHE_DIR", "", 1);
  EXPECT_TRUE(DiskCacheConfig::fromEnvironment()->root.empty());
  ::unsetenv("KILN_CACHE_DIR");
  ::setenv("XDG_CACHE_HOME", "/x/cache", 1);
  EXPECT_EQ(DiskCacheConfig::fromEnvironment()->root, "/x/cache/kiln");
  ::unsetenv("XDG_CACHE_HOME");
  ::setenv("HOME", "/home/u", 1);
  EXPECT_EQ(DiskCacheConfig::fromEnvironment()->root, "/home/u/.cache/kiln");
  ::setenv("KILN_CACHE_MAX_BYTES", "512M", 1);
  EXPECT_EQ(DiskCacheConfig::fromEnvironment()->maxBytes, 512ull << 20);
  ::setenv("KILN_CACHE_MAX_BYTES", "lots", 1);
  auto bad = DiskCacheConfig::fromEnvironment();
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("KILN_CACHE_MAX_BYTES"), std::string::npos);
  ::unsetenv("KILN_CACHE_MAX_BYTES");
  ::setenv("HOME", home.c_str(), 1);
  ::setenv("KILN_CACHE_DIR", "", 1); // as the other tests run (DiskKernelCacheTest.cpp)
}

// A root that is a file, or under one, caches nothing: it was silent.
TEST(DiskCache, ARootThatIsAFileIsNamedAndCachesNothing) {
  fs::path file = freshDir("file-root") / "file";
  std::ofstream(file) << "not a directory";
  for (const fs::path &root : {file, file / "sub"}) {
    testing::internal::CaptureStderr();
    DiskCache cache = cacheIn(root);
    std::string log = testing::internal::GetCapturedStderr();
    EXPECT_FALSE(cache.enabled()) << root;
    cache.store(keyOf("p"), "{}", {"binary"});
    EXPECT_FALSE(cache.load(keyOf("p"))) << root;
    if (root == file) // warned about once per process
      EXPECT_NE(log.find(file.string() + " is not a directory: kernels are not cached"),
                std::string::npos)
          << log;
  }
}

// A read-only directory: hits load, stores are skipped, nothing fails.
// Root ignores permissions, so the check runs in a child without them.
TEST(DiskCache, ReadOnlyDirectoryOnlyReads) {
  fs::path root = freshDir("readonly");
  cacheIn(root).store(keyOf("there"), "{}", {"binary"});
  auto readOnly = fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                  fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec;
  for (const auto &d : fs::recursive_directory_iterator(root))
    if (d.is_directory())
      fs::permissions(d.path(), readOnly);
  fs::permissions(root, readOnly);
  pid_t child = ::fork();
  if (child == 0) {
    if (::geteuid() == 0 && ::setresuid(65534, 65534, 65534) != 0)
      ::_exit(10);
    DiskCache cache = cacheIn(root);
    if (!cache.load(keyOf("there")))
      ::_exit(11);
    cache.store(keyOf("new"), "{}", {"binary"});
    cache.storeAlias(keyOf("alias"), keyOf("there"));
    ::_exit(cache.load(keyOf("new")) || fs::exists(cache.pathOf(keyOf("new"))) ? 12 : 0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  fs::permissions(root, fs::perms::owner_all, fs::perm_options::add);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: no unprivileged user, 11: hit lost, 12: wrote";
}

TEST(DiskCache, EvictsLeastRecentlyUsedUnderCap) {
  fs::path root = freshDir("evict");
  DiskCache cache = cacheIn(root);
  std::vector<fs::path> paths;
  for (int i = 0; i < 6; ++i) {
    cache.store(keyOf(std::to_string(i)), "{}", {std::string(10000, 'x')});
    paths.push_back(cache.pathOf(keyOf(std::to_string(i))));
    // Distinct times, oldest first.
    fs::last_write_time(paths.back(), fs::file_time_type::clock::now() -
                                          std::chrono::hours(10 - i));
  }
  ASSERT_TRUE(cache.load(keyOf("0"))); // now the most recently used
  uint64_t entryBytes = fs::file_size(paths[0]);
  DiskCache::evict(root, 3 * entryBytes);
  EXPECT_TRUE(fs::exists(paths[0]));
  EXPECT_FALSE(fs::exists(paths[1]));
  EXPECT_FALSE(fs::exists(paths[2]));
  EXPECT_FALSE(fs::exists(paths[3]));
  EXPECT_TRUE(fs::exists(paths[4]));
  EXPECT_TRUE(fs::exists(paths[5]));
  // A capped cache evicts as it stores.
  DiskCache capped = cacheIn(root, 2 * entryBytes);
  capped.store(keyOf("6"), "{}", {std::string(10000, 'x')});
  EXPECT_TRUE(capped.load(keyOf("6")));
  uint64_t total = 0;
  for (const auto &f : fs::recursive_directory_iterator(root))
    if (f.is_regular_file())
      total += f.file_size();
  EXPECT_LE(total, 2 * entryBytes);
}

// Another process evicts the entry a reader has open: the reader still
// reads it whole and it verifies.
TEST(DiskCache, EvictionNeverBreaksAReader) {
  fs::path root = freshDir("evict-reader");
  DiskCache cache = cacheIn(root);
  cache.store(keyOf("held"), "{}", {blobOf(7)});
  fs::path path = cache.pathOf(keyOf("held"));
  int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  pid_t child = ::fork();
  if (child == 0) {
    DiskCache::evict(root, 0);
    ::_exit(fs::exists(path) ? 1 : 0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the entry was not evicted";
  std::string bytes;
  char buffer[65536];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;)
    bytes.append(buffer, n);
  ::close(fd);
  auto entry = decodeCacheEntry(bytes);
  ASSERT_TRUE(entry) << entry.error().message;
  EXPECT_EQ(entry->blobs.at(0), blobOf(7));
}

// 16 processes share one empty directory, each loading or storing 200
// entries (all shared) in its own order, twice; a cap below the entries'
// total makes them evict under each other; four are killed mid-way. Every hit any process saw was
// right, and afterwards every entry verifies.
TEST(DiskCache, SixteenProcessesShareOneDirectory) {
  fs::path root = freshDir("concurrent");
  constexpr int kProcesses = 16, kKeys = 200;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    pid_t child = ::fork();
    if (child == 0) {
      DiskCache cache = cacheIn(root, 2u << 20);
      std::vector<int> order(kKeys);
      for (int i = 0; i < kKeys; ++i)
        order[i] = i;
      std::shuffle(order.begin(), order.end(), std::mt19937(p));
      for (int round = 0; round < 2; ++round)
        for (int i : order) {
          CacheKey key = keyOf("program " + std::to_string(i));
          if (auto entry = cache.load(key)) {
            if (entry->blobs != std::vector<std::string>{blobOf(i)} ||
                entry->metadata != "{\"i\":" + std::to_string(i) + "}")
              ::_exit(1); // a wrong hit
          } else {
            cache.store(key, "{\"i\":" + std::to_string(i) + "}", {blobOf(i)});
          }
        }
      ::_exit(0);
    }
    children.push_back(child);
  }
  for (int p = 0; p < kProcesses; p += 4) {
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
    ::kill(children[p], SIGKILL);
  }
  for (int p = 0; p < kProcesses; ++p) {
    int status = 0;
    ::waitpid(children[p], &status, 0);
    if (p % 4 == 0)
      continue; // killed (or finished before the signal)
    ASSERT_TRUE(WIFEXITED(status)) << "process " << p;
    EXPECT_EQ(WEXITSTATUS(status), 0) << "process " << p << " saw a wrong entry";
  }
  size_t entries = 0;
  for (const auto &f : fs::recursive_directory_iterator(root)) {
    if (f.path().extension() != kCacheEntrySuffix)
      continue; // a killed writer's temporary file: never read
    ++entries;
    auto entry = verifyCacheFile(f.path());
    EXPECT_TRUE(entry) << f.path() << ": " << entry.error().message;
  }
  EXPECT_GT(entries, 0u);
}

TEST(DiskCache, DirectoryNamesAreSafe) {
  EXPECT_EQ(cacheDirectoryName("cuda-sm_90"), "cuda-sm_90");
  for (const std::string &odd : std::vector<std::string>{"../../etc", "a/b", ".", "", std::string(200, 'x')}) {
    std::string name = cacheDirectoryName(odd);
    EXPECT_EQ(name.find('/'), std::string::npos) << odd;
    EXPECT_NE(name[0], '.') << odd;
    EXPECT_LE(name.size(), 80u) << odd;
  }
  EXPECT_NE(cacheDirectoryName("a/b"), cacheDirectoryName("a_b"));
}
