//===- TuneDatabase.cpp - JSON tune files ---------------------------------===//
#include "kiln/runtime/common/TuneDatabase.h"
#include "kiln/runtime/common/DiskCache.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace kiln {

Expected<AutotuneConfig> AutotuneConfig::fromEnvironment() {
  AutotuneConfig config;
  auto env = [](const char *name) { return std::getenv(name); };
  if (const char *mode = env("KILN_AUTOTUNE"); mode && *mode) {
    std::string_view m = mode;
    if (m == "off") config.mode = AutotuneMode::Off;
    else if (m == "cached") config.mode = AutotuneMode::Cached;
    else if (m == "on") config.mode = AutotuneMode::On;
    else
      return makeError(ErrorKind::InvalidArgument,
                       "KILN_AUTOTUNE='" + std::string(m) + "': expected off, cached or on");
  }
  if (const char *budget = env("KILN_AUTOTUNE_BUDGET_MS"); budget && *budget) {
    auto v = tuning_detail::number(budget);
    if (!v || *v == 0)
      return makeError(ErrorKind::InvalidArgument,
                       "KILN_AUTOTUNE_BUDGET_MS='" + std::string(budget) +
                           "': expected a positive number of milliseconds");
    config.budgetMs = static_cast<double>(*v);
  }
  auto disk = DiskCacheConfig::fromEnvironment();
  if (!disk)
    return std::unexpected(disk.error());
  if (!disk->root.empty())
    config.directory = tuneDirectoryOf(disk->root);
  if (const char *files = env("KILN_TUNE_FILE"))
    for (std::string_view f : tuning_detail::split(files, ':'))
      if (!f.empty())
        config.shippedFiles.emplace_back(f);
  return config;
}

fs::path tuneDirectoryOf(const fs::path &cacheRoot) { return cacheRoot / "tune"; }

fs::path tuneFileOf(const fs::path &directory, std::string_view device) {
  return directory / (cacheDirectoryName(device) + ".json");
}

namespace {
/// {"tile_n": 256, "stages": 2}: values named by the template's parameters.
json configJson(const std::vector<std::string> &params, const std::vector<int64_t> &values) {
  json j = json::object();
  for (size_t i = 0; i < values.size() && i < params.size(); ++i)
    j[params[i]] = values[i];
  return j;
}

/// The values of a config object in the order of `params` (set from the
/// first config read when empty); JSON objects are unordered, so its names
/// may come in any order, but must be the same names.
std::vector<int64_t> configOf(const json &j, std::vector<std::string> &params, const char *what) {
  if (!j.is_object() || j.empty())
    throw std::runtime_error(std::string(what) + " is not an object of integers");
  std::vector<std::string> names;
  std::vector<int64_t> values;
  for (auto &[name, v] : j.items()) {
    if (!v.is_number_integer() || v.template get<int64_t>() < 0)
      throw std::runtime_error(std::string(what) + "." + name + " is not a whole number");
    names.push_back(name);
    values.push_back(v.template get<int64_t>());
  }
  if (params.empty()) {
    params = names;
    return values;
  }
  auto other = [&] {
    return std::runtime_error(std::string(what) + " names other parameters than \"best\"");
  };
  if (names.size() != params.size())
    throw other();
  std::vector<int64_t> ordered;
  for (const std::string &p : params) {
    auto at = std::find(names.begin(), names.end(), p);
    if (at == names.end())
      throw other();
    ordered.push_back(values[at - names.begin()]);
  }
  return ordered;
}

/// A JSON shape error in a tune file, at the line where entry `index`
/// starts (the index-th "template"), or line 1 for the top level.
struct Located {
  std::string_view text;
  std::string file;
  size_t lineOfEntry(size_t index) const {
    size_t at = 0;
    for (size_t i = 0; i <= index; ++i) {
      size_t found = text.find("\"template\"", at);
      if (found == std::string_view::npos)
        return 1;
      at = found + 1;
    }
    return 1 + std::count(text.begin(), text.begin() + at, '\n');
  }
  std::unexpected<Error> error(size_t line, const std::string &what) const {
    return makeError(ErrorKind::InvalidArgument,
                     file + ":" + std::to_string(line) + ": bad tune file: " + what);
  }
};

std::vector<int64_t> integers(const json &j, const char *what) {
  if (!j.is_array())
    throw std::runtime_error(std::string(what) + " is not a list of integers");
  std::vector<int64_t> out;
  for (const json &v : j) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0)
      throw std::runtime_error(std::string(what) + " is not a list of integers");
    out.push_back(v.get<int64_t>());
  }
  return out;
}

double milliseconds(const json &j, const char *what) {
  if (!j.is_number() || !std::isfinite(j.get<double>()) || j.get<double>() < 0)
    throw std::runtime_error(std::string(what) + " is not a time in milliseconds");
  return j.get<double>();
}

std::string string(const json &j, const char *what) {
  if (!j.is_string())
    throw std::runtime_error(std::string(what) + " is not a string");
  return j.get<std::string>();
}

const json &field(const json &j, const char *name) {
  if (!j.is_object() || !j.contains(name))
    throw std::runtime_error(std::string("\"") + name + "\" is missing");
  return j.at(name);
}

TuneEntry entryOf(const json &j) {
  TuneEntry e;
  e.key.templateName = string(field(j, "template"), "\"template\"");
  e.key.candidatesHash = string(field(j, "candidates"), "\"candidates\"");
  const json &key = field(j, "key");
  e.key.op = string(field(key, "op"), "\"key.op\"");
  for (const json &d : field(key, "dtypes"))
    e.key.dtypes.push_back(string(d, "a dtype"));
  e.key.shape = integers(field(key, "shape"), "\"key.shape\"");
  e.best = configOf(field(j, "best"), e.params, "\"best\"");
  const json &timings = field(j, "timings_ms");
  if (!timings.is_array())
    throw std::runtime_error("\"timings_ms\" is not a list");
  for (const json &t : timings)
    e.timings.push_back({configOf(field(t, "config"), e.params, "\"config\""),
                         milliseconds(field(t, "median"), "\"median\""),
                         milliseconds(field(t, "spread"), "\"spread\"")});
  return e;
}
} // namespace

Expected<TuneDatabase> TuneDatabase::parse(std::string_view text, const std::string &file) {
  Located where{text, file};
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    // Parse again for the error's byte offset (1-based), then its line.
    try {
      json again = json::parse(text);
    } catch (const json::parse_error &e) {
      size_t byte = std::min<size_t>(e.byte ? e.byte - 1 : 0, text.size());
      size_t line = 1 + std::count(text.begin(), text.begin() + byte, '\n');
      std::string what = e.what();
      if (auto at = what.find("syntax error"); at != std::string::npos)
        what = what.substr(at);
      return where.error(line, "not JSON: " + what);
    } catch (const json::exception &e) {
      // A number too large for any JSON number type (out_of_range.406)
      // fails without a byte offset.
      return where.error(1, std::string("not JSON: ") + e.what());
    }
    return where.error(1, "not JSON");
  }
  if (!j.is_object())
    return where.error(1, "not a JSON object");
  if (!j.contains("format") || j["format"] != kTuneFormatVersion)
    return where.error(1, "\"format\" is not " + std::to_string(kTuneFormatVersion));
  TuneDatabase db;
  try {
    db.device_ = string(field(j, "device"), "\"device\"");
    if (j.contains("kiln"))
      db.builtBy = string(j["kiln"], "\"kiln\"");
  } catch (const std::exception &e) {
    return where.error(1, e.what());
  }
  if (!j.contains("entries") || !j["entries"].is_array())
    return where.error(1, "\"entries\" is not a list");
  const json &entries = j["entries"];
  for (size_t i = 0; i < entries.size(); ++i) {
    try {
      db.insert(entryOf(entries[i]));
    } catch (const std::exception &e) {
      return where.error(where.lineOfEntry(i), "entry #" + std::to_string(i) + ": " + e.what());
    }
  }
  return db;
}

Expected<TuneDatabase> TuneDatabase::read(const fs::path &file) {
  auto bytes = readCacheFile(file);
  if (!bytes)
    return makeError(ErrorKind::InvalidArgument, file.string() + ": cannot read the tune file");
  return parse(*bytes, file.string());
}

std::string TuneDatabase::toJson() const {
  // One entry per line, so that files diff and merge line by line.
  std::string out = "{\"format\": " + std::to_string(kTuneFormatVersion) +
                    ", \"device\": " + json(device_).dump() +
                    ", \"kiln\": " + json(builtBy).dump() + ",\n \"entries\": [";
  for (size_t i = 0; i < entries_.size(); ++i) {
    const TuneEntry &e = entries_[i];
    json timings = json::array();
    for (const TuneTiming &t : e.timings)
      timings.push_back({{"config", configJson(e.params, t.config)},
                         {"median", t.median},
                         {"spread", t.spread}});
    json entry = {{"template", e.key.templateName},
                  {"candidates", e.key.candidatesHash},
                  {"key", {{"op", e.key.op}, {"dtypes", e.key.dtypes}, {"shape", e.key.shape}}},
                  {"best", configJson(e.params, e.best)},
                  {"timings_ms", timings}};
    out += std::string(i ? ",\n  " : "\n  ") + entry.dump();
  }
  return out + "\n]}\n";
}

void TuneDatabase::insert(TuneEntry entry) {
  std::string text = entry.key.text();
  for (TuneEntry &e : entries_)
    if (e.key.text() == text) {
      e = std::move(entry);
      return;
    }
  entries_.push_back(std::move(entry));
  std::sort(entries_.begin(), entries_.end(),
            [](const TuneEntry &a, const TuneEntry &b) { return a.key.text() < b.key.text(); });
}

void TuneDatabase::merge(const TuneDatabase &other) {
  if (device_.empty())
    device_ = other.device_;
  for (const TuneEntry &e : other.entries_)
    insert(e);
}

const TuneEntry *TuneDatabase::find(const TuneKey &key) const {
  std::string text = key.text();
  for (const TuneEntry &e : entries_)
    if (e.key.text() == text)
      return &e;
  return nullptr;
}

std::optional<TuneEntry> TuneEntry::inOrderOf(const std::vector<std::string> &names) const {
  if (names.size() != params.size())
    return std::nullopt;
  std::vector<size_t> from;
  for (const std::string &name : names) {
    auto at = std::find(params.begin(), params.end(), name);
    if (at == params.end())
      return std::nullopt;
    from.push_back(at - params.begin());
  }
  auto reorder = [&](const std::vector<int64_t> &values) {
    std::vector<int64_t> out;
    for (size_t i : from)
      out.push_back(values.at(i));
    return out;
  };
  TuneEntry e{key, names, reorder(best), {}};
  for (const TuneTiming &t : timings)
    e.timings.push_back({reorder(t.config), t.median, t.spread});
  return e;
}

TuneTable TuneDatabase::table(const std::vector<TuneSpace> &spaces) const {
  TuneTable out;
  for (const TuneEntry &e : entries_)
    for (const TuneSpace &s : spaces) {
      if (s.name != e.key.templateName || s.hash() != e.key.candidatesHash)
        continue;
      if (auto own = e.inOrderOf(s.params); own && s.parseConfig(TuneSpace::configText(own->best)))
        out[e.key.text()] = TuneSpace::configText(own->best);
    }
  return out;
}

Expected<void> TuneDatabase::write(const fs::path &file, OnSameKey onSameKey) const {
  std::error_code ec;
  fs::create_directories(file.parent_path().empty() ? "." : file.parent_path(), ec);
  // One writer at a time merges with the file's current entries (a lock
  // file beside it); readers never lock: they see the old or new file.
  fs::path lockPath = file.string() + ".lock";
  int lock = ::open(lockPath.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock < 0 || ::flock(lock, LOCK_EX) != 0) {
    if (lock >= 0)
      ::close(lock);
    return makeError(ErrorKind::InvalidArgument,
                     file.string() + ": cannot write the tune file (directory not writable?)");
  }
  TuneDatabase merged(device_);
  merged.builtBy = builtBy;
  std::optional<TuneDatabase> current;
  if (fs::exists(file, ec)) {
    auto read = TuneDatabase::read(file);
    if (!read) {
      ::close(lock);
      return makeError(ErrorKind::InvalidArgument, read.error().message + " (not replaced)");
    }
    if (read->device_ == device_)
      current = std::move(*read);
  }
  if (current && onSameKey == OnSameKey::Replace)
    merged.merge(*current);
  merged.merge(*this);
  if (current && onSameKey == OnSameKey::Keep)
    merged.merge(*current);
  static std::atomic<uint64_t> counter = 0;
  fs::path temp =
      file.string() + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  std::string bytes = merged.toJson();
  bool ok = false;
  if (FILE *out = std::fopen(temp.c_str(), "wb")) {
    ok = std::fwrite(bytes.data(), 1, bytes.size(), out) == bytes.size();
    ok = std::fflush(out) == 0 && ::fsync(fileno(out)) == 0 && ok;
    ok = std::fclose(out) == 0 && ok;
  }
  ok = ok && ::rename(temp.c_str(), file.c_str()) == 0;
  if (!ok)
    ::unlink(temp.c_str());
  ::close(lock);
  if (!ok)
    return makeError(ErrorKind::InvalidArgument, file.string() + ": cannot write the tune file");
  return {};
}

} // namespace kiln
