//===- Autotune.cpp - tuning kernels into JSON tune files -----------------===//
#include "kiln/backend/Autotune.h"
#include "kiln/BuildId.h"
#include "kiln/Lowering/TuneSpaces.h"
#include "kiln/backend/Backend.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <set>

namespace kiln {

namespace {
std::atomic<size_t> benchmarks = 0, lookupHits = 0;

const std::vector<TuneSpace> &spaces() {
  static const std::vector<TuneSpace> all = kernelTuneSpaces();
  return all;
}

/// Wall time each candidate runs before it is timed.
constexpr double kWarmUpMs = 20;
/// A candidate replaces the kernel's untuned choice only if its median is
/// this much lower: within it the timings of two tilings trade places from
/// one tuning to the next (tf32 3000x257x511 on the H200: the "winner"
/// ran 24% slower than untuned in a fresh process), and the untuned choice
/// is the one a run without a tune file gets.
constexpr double kMinGainOverUntuned = 0.03;

void warn(const std::string &message) { std::fprintf(stderr, "kiln: %s\n", message.c_str()); }

/// Input sets a bandwidth-bound kernel's timing rotates through, so that
/// together they exceed the last-level cache (H200: 60 MB).
size_t rotationSets(const TuneKey &key, size_t bytesPerSet) {
  if (key.op == "matmul" || key.op == "batch_matmul" || bytesPerSet == 0)
    return 1;
  constexpr size_t kBeyondCache = size_t{256} << 20;
  return std::clamp<size_t>((kBeyondCache + bytesPerSet - 1) / bytesPerSet, 1, 8);
}
} // namespace

size_t Autotuner::benchmarksRun() { return benchmarks; }
size_t Autotuner::tunedLookupHits() { return lookupHits; }

Autotuner::Autotuner() {
  auto config = AutotuneConfig::fromEnvironment();
  if (!config) {
    warn(config.error().message + " (autotuning is off)");
    settings.mode = AutotuneMode::Off;
  } else {
    settings = std::move(*config);
  }
}

Autotuner &Autotuner::instance() {
  static Autotuner tuner;
  return tuner;
}

void Autotuner::configure(AutotuneConfig config) {
  std::lock_guard lock(mutex);
  settings = std::move(config);
  devices.clear();
}

Autotuner::DeviceTuning &Autotuner::tuningOf(const std::string &device) {
  if (auto it = devices.find(device); it != devices.end())
    return it->second;
  // Shipped files first; the cache's own file (what this machine measured)
  // replaces their entries of the same key.
  TuneDatabase db(device);
  std::vector<std::filesystem::path> files = settings.shippedFiles;
  if (!settings.directory.empty())
    if (auto own = tuneFileOf(settings.directory, device); std::filesystem::exists(own))
      files.push_back(own);
  for (const auto &file : files) {
    auto read = TuneDatabase::read(file);
    if (!read)
      warn(read.error().message + " (the file is ignored: defaults are used)");
    else if (read->device() == device)
      db.merge(*read);
  }
  TuneTable table = db.table(spaces());
  return devices.emplace(device, DeviceTuning{std::move(db), std::move(table)}).first->second;
}

CompileOptions Autotuner::apply(const std::string &device, const CompileOptions &options) {
  if (!options.tuned.empty())
    return options;
  std::lock_guard lock(mutex);
  if (settings.mode == AutotuneMode::Off)
    return options;
  CompileOptions tuned = options;
  tuned.tuned = tuningOf(device).table;
  return tuned;
}

void Autotuner::countHits(const CompileOptions &options, const std::vector<std::string> &keys) {
  for (const std::string &key : keys)
    if (options.tuned.count(key))
      ++lookupHits;
}

std::vector<std::string> Autotuner::untuned(const std::string &device,
                                            const std::vector<std::string> &keys) {
  std::lock_guard lock(mutex);
  const TuneTable &table = tuningOf(device).table;
  std::vector<std::string> out;
  for (const std::string &key : keys)
    if (!table.count(key) && attempted.insert(device + "|" + key).second)
      out.push_back(key);
  return out;
}

Expected<void> Autotuner::record(const std::string &device, const TuneEntry &entry) {
  std::lock_guard lock(mutex);
  DeviceTuning &tuning = tuningOf(device);
  tuning.entries.insert(entry);
  tuning.table = tuning.entries.table(spaces());
  if (settings.directory.empty())
    return {};
  TuneDatabase one(device);
  one.builtBy = kBuildId;
  one.insert(entry);
  return one.write(tuneFileOf(settings.directory, device));
}

Expected<std::vector<TuneEntry>>
Autotuner::tune(Backend &backend, std::string_view program, const CompileOptions &options,
                std::vector<std::string> keys, double budgetMs,
                const std::function<void(const TuneProgress &)> &progress) {
  Engine &engine = backend.kernels();
  const std::string &device = engine.target().fingerprint();
  CompileOptions base = apply(device, options);
  // The program untuned (no tuned config, not even the table compile()
  // would add): its tune keys, and what each kernel takes untuned.
  CompileOptions plain = options;
  plain.tuned.clear();
  auto untunedCompile = engine.compileAsGiven(program, plain);
  if (!untunedCompile)
    return std::unexpected(untunedCompile.error());
  if (keys.empty())
    keys = (*untunedCompile)->tuneKeys();
  const std::map<std::string, std::string> &untuned = (*untunedCompile)->untunedConfigs();
  std::vector<TuneEntry> entries;
  for (const std::string &text : keys) {
    // The budget is of timing: compiles (cached on disk) are not counted.
    using Clock = std::chrono::steady_clock;
    double spentMs = 0;
    Clock::time_point start;
    auto elapsedMs = [&] {
      return spentMs + std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    };
    auto key = TuneKey::parse(text);
    const TuneSpace *space = nullptr;
    for (const TuneSpace &s : spaces())
      if (key && s.name == key->templateName)
        space = &s;
    if (!space)
      return makeError(ErrorKind::InvalidArgument, "tune key '" + text + "' names no template of this kiln");
    if (space->hash() != key->candidatesHash)
      return makeError(ErrorKind::InvalidArgument,
                       "tune key '" + text + "' was made for another candidate list of " +
                           space->name + " (this build's hash is " + space->hash() + ")");
    TuneEntry entry{*key, space->params, {}, {}};
    std::vector<std::vector<Tensor>> inputSets;
    // What the kernel takes untuned (the default unless the pass chose by
    // the shape) is always timed, first; the others while the budget lasts.
    std::vector<std::vector<int64_t>> order = space->candidates;
    if (auto it = untuned.find(text); it != untuned.end())
      if (auto first = space->parseConfig(it->second)) {
        auto at = std::ranges::find(order, *first);
        std::rotate(order.begin(), at, at + 1);
      }
    TuneWinner winner{kMinGainOverUntuned};
    for (size_t j = 0; j < order.size(); ++j) {
      if (j > 0 && spentMs > budgetMs)
        break;
      const std::vector<int64_t> &config = order[j];
      CompileOptions forced = base;
      forced.tuned[text] = TuneSpace::configText(config);
      auto compiled = engine.compile(program, forced);
      if (!compiled)
        continue; // a candidate this program or chip cannot take
      if (inputSets.empty()) {
        size_t bytes = 0;
        for (const TensorSignature &s : (*compiled)->inputs())
          bytes += tensorBytes(s.dtype, s.shape).value_or(0);
        for (size_t set = 0; set < rotationSets(*key, bytes); ++set) {
          std::vector<Tensor> inputs;
          for (const TensorSignature &s : (*compiled)->inputs()) {
            auto t = backend.randomUniform(s.dtype, s.shape, -1, 1);
            if (!t)
              return std::unexpected(t.error());
            inputs.push_back(std::move(*t));
          }
          inputSets.push_back(std::move(inputs));
        }
      }
      start = Clock::now();
      size_t next = 0;
      auto runs = [&](int count) -> Expected<void> {
        for (int r = 0; r < count; ++r)
          if (auto out = backend.run(program, inputSets[next++ % inputSets.size()], forced); !out)
            return std::unexpected(out.error());
        return {};
      };
      // Warm-up for kWarmUpMs at least (a single warm-up run left spreads
      // of a quarter to the whole median on the H200's Vulkan, after the
      // GPU idled through the candidate's compile), then as many runs per
      // sample as make it about 2 ms.
      auto timed = [&] { spentMs = elapsedMs(); };
      const Clock::time_point warmUpStart = Clock::now();
      auto warmFor = [&] {
        return std::chrono::duration<double, std::milli>(Clock::now() - warmUpStart).count();
      };
      bool warm = runs(1) && backend.sync();
      while (warm && warmFor() < kWarmUpMs)
        warm = runs(1) && backend.sync();
      if (!warm) {
        timed();
        continue;
      }
      auto once = backend.profile([&] { return runs(1); });
      if (!once || !once->milliseconds) {
        timed();
        continue;
      }
      int reps = std::clamp(static_cast<int>(2.0 / std::max(*once->milliseconds, 1e-3)), 1, 64);
      std::vector<double> samples;
      for (int s = 0; s < 5; ++s) {
        auto t = backend.profile([&] { return runs(reps); });
        if (!t || !t->milliseconds)
          break;
        samples.push_back(*t->milliseconds / reps);
        if (j > 0 && samples.size() >= 3 && elapsedMs() > budgetMs)
          break;
      }
      timed();
      if (samples.empty())
        continue;
      ++benchmarks;
      std::sort(samples.begin(), samples.end());
      TuneTiming timing{config, samples[samples.size() / 2], samples.back() - samples.front()};
      entry.timings.push_back(timing);
      if (winner.offer(j, timing.median))
        entry.best = config;
      if (progress)
        progress({text, j + 1, space->candidates.size(), winner.bestMs,
                  std::max(0.0, budgetMs - spentMs)});
    }
    if (entry.best.empty())
      return makeError(ErrorKind::Compile, "tune key '" + text + "': no candidate compiled and ran");
    entries.push_back(std::move(entry));
  }
  return entries;
}

Expected<std::pair<std::string, CompileOptions>> tuneOpProgram(std::string_view spec) {
  auto bad = [&](const std::string &why) {
    return makeError(ErrorKind::InvalidArgument, "--op '" + std::string(spec) + "': " + why);
  };
  auto parts = tuning_detail::split(spec, ':');
  std::vector<int64_t> s;
  if (parts.size() == 3) {
    for (std::string_view d : tuning_detail::split(parts[1], 'x')) {
      auto v = tuning_detail::number(d);
      if (!v || *v == 0)
        return bad("sizes are positive whole numbers joined by 'x'");
      s.push_back(*v);
    }
  }
  if (parts.size() != 3 || parts[0].empty())
    return bad("expected OP:SHAPE:DTYPE, e.g. matmul:4096x4096x4096:bf16");
  std::string op(parts[0]), dtype(parts[2]);
  CompileOptions options;
  if (dtype == "tf32") {
    options.tf32 = true;
    dtype = "f32";
  }
  if (dtype != "f32" && dtype != "f16" && dtype != "bf16" && dtype != "f64")
    return bad("dtype '" + dtype + "' is not f32, f16, bf16, tf32 or f64");
  auto tensor = [&](std::vector<int64_t> dims, const std::string &element) {
    std::string t = "tensor<";
    for (int64_t d : dims)
      t += std::to_string(d) + "x";
    return t + element + ">";
  };
  std::string a, b, result, body;
  if (op == "matmul" || op == "batch_matmul") {
    size_t rank = op == "matmul" ? 3 : 4;
    if (s.size() != rank)
      return bad(op + " takes " + (rank == 3 ? "MxNxK" : "BxMxNxK"));
    std::vector<int64_t> batch(s.begin(), s.end() - 3);
    int64_t m = s[rank - 3], n = s[rank - 2], k = s[rank - 1];
    auto with = [&](std::vector<int64_t> dims) {
      dims.insert(dims.begin(), batch.begin(), batch.end());
      return dims;
    };
    a = tensor(with({m, k}), dtype);
    b = tensor(with({k, n}), dtype);
    result = tensor(with({m, n}), dtype == "f64" ? "f64" : "f32");
    body = "kiln.matmul %a, %b : (" + a + ", " + b + ") -> " + result;
  } else if (op == "softmax") {
    if (s.size() != 2)
      return bad("softmax takes RxC");
    a = result = tensor(s, dtype);
    body = "kiln.softmax %a {dim = 1} : " + a;
  } else {
    // An elementwise binary op of the dialect (add, mul, ...).
    a = b = result = tensor(s, dtype);
    body = "kiln." + op + " %a, %b : (" + a + ", " + a + ") -> " + a;
  }
  std::string text = "func.func @main(%a: " + a + (b.empty() ? "" : ", %b: " + b) + ") -> " +
                     result + " {\n  %r = " + body + "\n  return %r : " + result + "\n}\n";
  return std::pair{text, options};
}

} // namespace kiln
