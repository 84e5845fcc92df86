//===- Switch.h - on/off settings from the environment ----------*- C++ -*-===//
//
// kiln's on/off environment settings (KILN_CUDA_WGMMA, KILN_AUTO_DYNAMIC,
// ...) read one way: each had its own test ("!= 0", "== 1"), so
// KILN_CUDA_WGMMA=off left wgmma on without a word. Header-only: the
// compiler library reads some without linking the runtime.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_COMMON_SWITCH_H
#define KILN_RUNTIME_COMMON_SWITCH_H

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace kiln {

/// The environment variable `name` as a switch: 1/on/true/yes or
/// 0/off/false/no (any case); unset or empty, `fallback`; anything else
/// is warned about and taken as `fallback`.
inline bool switchSetting(const char *name, bool fallback) {
  const char *value = std::getenv(name);
  if (!value || !*value)
    return fallback;
  std::string text(value);
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char *on : {"1", "on", "true", "yes"})
    if (text == on)
      return true;
  for (const char *off : {"0", "off", "false", "no"})
    if (text == off)
      return false;
  std::fprintf(stderr, "kiln: %s='%s': expected 1/on/true/yes or 0/off/false/no (it stays %s)\n",
               name, value, fallback ? "on" : "off");
  return fallback;
}

} // namespace kiln

#endif
