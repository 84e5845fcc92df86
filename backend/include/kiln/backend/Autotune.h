//===- Autotune.h - tuning kernels into JSON tune files ---------*- C++ -*-===//
//
// docs/autotune.md. The process's tune files per device fingerprint (the
// cache's KILN_CACHE_DIR/tune/ file and KILN_TUNE_FILE's shipped ones),
// KILN_AUTOTUNE's mode, and the tuner: a key is tuned by compiling a program
// that uses it once per candidate of its template (that key's config forced)
// and timing each with the backend's profiler.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_BACKEND_AUTOTUNE_H
#define KILN_BACKEND_AUTOTUNE_H

#include "kiln/Lowering/Compiler.h"
#include "kiln/runtime/common/TuneDatabase.h"

#include <functional>
#include <mutex>
#include <set>

namespace kiln {

class Backend;

/// What kiln-tune's progress line shows.
struct TuneProgress {
  std::string key;
  size_t candidate = 0, candidates = 0; // 1-based
  double bestMs = 0;                    // 0: none yet
  double leftMs = 0;                    // of the key's budget
};

class Autotuner {
public:
  /// The process's tuner, configured from the environment at first use (a
  /// malformed variable is reported once, and autotuning is off).
  static Autotuner &instance();
  /// Replaces the configuration and forgets loaded files (tests, kiln-tune).
  void configure(AutotuneConfig config);
  const AutotuneConfig &config() const { return settings; }

  /// The tune table for a device: `options.tuned` when already set (a
  /// caller's choice), else the tune files' entries (none when off).
  CompileOptions apply(const std::string &device, const CompileOptions &options);
  /// Of `keys`, those `device` has no current entry for and that were not
  /// tried before in this process (each key is tuned at most once).
  std::vector<std::string> untuned(const std::string &device, const std::vector<std::string> &keys);
  /// Counts the keys of a compiled program that `options` had tuned.
  static void countHits(const CompileOptions &options, const std::vector<std::string> &keys);
  /// Adds an entry to the device's table and writes the cache's tune file.
  Expected<void> record(const std::string &device, const TuneEntry &entry);

  /// Tunes each key in `keys` of `program` (all of the program's tune keys
  /// when empty) on `backend`, within `budgetMs` per key; returns the
  /// entries, best first config of each. Keys of templates this build does
  /// not know are an error.
  Expected<std::vector<TuneEntry>>
  tune(Backend &backend, std::string_view program, const CompileOptions &options,
       std::vector<std::string> keys, double budgetMs,
       const std::function<void(const TuneProgress &)> &progress = {});

  /// Counters for tests: candidates timed, and compiles that found a tuned
  /// entry for one of their kernels.
  static size_t benchmarksRun();
  static size_t tunedLookupHits();

private:
  Autotuner();
  /// A device's entries from its files, and the table of those current.
  struct DeviceTuning {
    TuneDatabase entries;
    TuneTable table;
  };
  DeviceTuning &tuningOf(const std::string &device);
  std::mutex mutex;
  AutotuneConfig settings;
  std::map<std::string, DeviceTuning> devices; // by device fingerprint
  std::set<std::string> attempted;               // device|key, mode On
};

/// A one-op program for kiln-tune's `--op OP:SHAPE:DTYPE` (matmul:MxNxK,
/// batch_matmul:BxMxNxK, softmax:RxC, an elementwise binary op such as
/// add:N; dtype f32, f16, bf16 or tf32), with the options it needs (tf32).
Expected<std::pair<std::string, CompileOptions>> tuneOpProgram(std::string_view spec);

} // namespace kiln

#endif
