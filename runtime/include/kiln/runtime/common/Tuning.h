//===- Tuning.h - kernel templates' tune spaces and tune keys -*- C++ -*-===//
//
// Header-only and MLIR-free, for the passes (kiln-opt links no runtime),
// the backend and kiln-tune alike (docs/autotune.md). A template declares
// its TuneSpace once (its Tunables header); a kernel's TuneKey names the
// template, the hash of its candidate list, the op, dtypes and the shape
// anchored to powers of two. The tune files: TuneDatabase.h.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_COMMON_TUNING_H
#define KILN_RUNTIME_COMMON_TUNING_H

#include <cstdint>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

/// 16 hex digits of FNV-1a 64 of `text`: the same in every build and on
/// every machine (tune files outlive builds).
inline std::string stableHash(std::string_view text) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : text)
    h = (h ^ c) * 1099511628211ull;
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

/// One kernel template's tunables: parameter names and the candidate
/// configurations (values in parameter order), the default first.
struct TuneSpace {
  std::string name; // "cuda.matmul.mma"
  std::vector<std::string> params;
  std::vector<std::vector<int64_t>> candidates;

  /// stableHash of name, parameters and candidates: changed by any edit of
  /// the list, which invalidates tune entries made with the old one.
  std::string hash() const;
  /// "256x2x128": the values joined by 'x'.
  static std::string configText(const std::vector<int64_t> &values);
  /// The candidate `text` names; nullopt when it names none.
  std::optional<std::vector<int64_t>> parseConfig(std::string_view text) const;
};

/// 2^round(log2 d) for d >= 1 (1000 -> 1024, 3000 -> 4096, 257 -> 256),
/// at most 2^62; 1 for d < 1.
inline int64_t anchorToPowerOfTwo(int64_t d);

/// What a tuned configuration is chosen by.
struct TuneKey {
  std::string templateName, candidatesHash, op;
  std::vector<std::string> dtypes;
  std::vector<int64_t> shape; // anchored
  /// "cpu.matmul@HASH:matmul:f32,f32,f32:64x64x64"
  std::string text() const;
  static std::optional<TuneKey> parse(std::string_view text);
  bool operator==(const TuneKey &) const = default;
};

/// Tuned configurations by key text; what CompileOptions carries.
using TuneTable = std::map<std::string, std::string>;

inline std::string TuneSpace::hash() const {
  std::string text = name;
  for (const std::string &p : params)
    text += "|" + p;
  for (const auto &c : candidates)
    text += "|" + configText(c);
  return stableHash(text);
}

inline std::string TuneSpace::configText(const std::vector<int64_t> &values) {
  std::string text;
  for (size_t i = 0; i < values.size(); ++i)
    text += (i ? "x" : "") + std::to_string(values[i]);
  return text;
}

inline std::optional<std::vector<int64_t>> TuneSpace::parseConfig(std::string_view text) const {
  for (const auto &c : candidates)
    if (configText(c) == text)
      return c;
  return std::nullopt;
}

inline int64_t anchorToPowerOfTwo(int64_t d) {
  if (d <= 1)
    return 1;
  long exponent = std::lround(std::log2(static_cast<double>(d)));
  return int64_t{1} << std::min(exponent, 62L);
}

/// A key's best candidate so far, offered its timings in tuning order, the
/// untuned choice first: another candidate replaces that one only where
/// its median is lower by more than `minGainOverFirst` (a fraction), so
/// that timings within the tuner's noise keep what a run without a tune
/// file gets; past it, the fastest wins.
struct TuneWinner {
  double minGainOverFirst = 0;
  std::optional<size_t> best;
  double bestMs = 0;

  /// Whether candidate `index` (`index == 0`: the untuned choice), timed
  /// at `medianMs`, becomes the best.
  bool offer(size_t index, double medianMs) {
    double needed = best == size_t{0} ? bestMs * (1 - minGainOverFirst) : bestMs;
    if (best && medianMs >= needed)
      return false;
    best = index;
    bestMs = medianMs;
    return true;
  }
};

namespace tuning_detail {
inline std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  for (size_t at = 0;;) {
    size_t end = text.find(separator, at);
    parts.push_back(text.substr(at, end - at));
    if (end == std::string_view::npos)
      return parts;
    at = end + 1;
  }
}

inline std::optional<int64_t> number(std::string_view text) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 0)
    return std::nullopt;
  return v;
}
} // namespace tuning_detail

inline std::string TuneKey::text() const {
  std::string t = templateName + "@" + candidatesHash + ":" + op + ":";
  for (size_t i = 0; i < dtypes.size(); ++i)
    t += (i ? "," : "") + dtypes[i];
  return t + ":" + TuneSpace::configText(shape);
}

inline std::optional<TuneKey> TuneKey::parse(std::string_view text) {
  auto parts = tuning_detail::split(text, ':');
  if (parts.size() != 4)
    return std::nullopt;
  auto at = parts[0].find('@');
  if (at == std::string_view::npos)
    return std::nullopt;
  TuneKey key{std::string(parts[0].substr(0, at)), std::string(parts[0].substr(at + 1)),
              std::string(parts[1]), {}, {}};
  for (std::string_view d : tuning_detail::split(parts[2], ','))
    key.dtypes.emplace_back(d);
  for (std::string_view d : tuning_detail::split(parts[3], 'x')) {
    auto v = tuning_detail::number(d);
    if (!v)
      return std::nullopt;
    key.shape.push_back(*v);
  }
  if (key.templateName.empty() || key.op.empty())
    return std::nullopt;
  return key;
}

} // namespace kiln

#endif
