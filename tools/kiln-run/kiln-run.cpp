//===- kiln-run.cpp - run a kiln program on a device ---------------------===//
//
// kiln-run PROGRAM.mlir [--entry NAME] [--device cpu|cuda[:N]|vulkan[:N]]
//   [--input FILE.npy]... [--seed N] [--output-dir DIR] [--print] [--bench N]
//   [--dump-dir DIR] [--compile-only [--chip sm_XX] [--cooperative-matrix MxNxK]]
//   [--cubin] [--tf32]
//   [--cache-stats]
// Exit 0 on success, 2 for bad usage or bad input (tensors too large for
// memory included), 1 for a runtime failure.
//
//===----------------------------------------------------------------------===//
#include "kiln/backend/Autotune.h"
#include "kiln/backend/Backend.h"
#include "kiln/backend/CompilerLibrary.h"
#include "kiln/runtime/cpu/CpuDevice.h"
#include "kiln/backend/Engine.h"
#include "kiln/runtime/common/Npy.h"
#include "kiln/runtime/cuda/CudaToolkit.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

using namespace kiln;

namespace {

constexpr const char *kUsage =
    "usage: kiln-run PROGRAM.mlir [--entry NAME] [--device cpu|cuda[:N]|vulkan[:N]]\n"
    "                [--input FILE.npy]... [--seed N] [--output-dir DIR] [--print]\n"
    "                [--bench N] [--dump-dir DIR]\n"
    "                [--compile-only [--chip sm_XX] [--cooperative-matrix MxNxK]]\n"
    "                [--cubin] [--tf32] [--cache-stats]\n"
    "--cooperative-matrix MxNxK: with --compile-only --device vulkan, compile for\n"
    "         a device with that f16 x f16 -> f32 cooperative matrix\n"
    "         (VK_KHR_cooperative_matrix), e.g. 16x16x16\n"
    "--cubin: CUDA modules assembled by the toolkit's ptxas, a failure an error\n"
    "         (default: PTX through the driver's JIT, or KILN_PTXAS's cubins)\n"
    "--tf32: CUDA f32 matmuls on tensor cores, inputs rounded to tf32\n"
    "--bench N: N more runs, timed on the host with inputs and results copied\n"
    "           each run, then N runs on inputs and results resident on the\n"
    "           device, timed by the device (CUDA events, Vulkan timestamps,\n"
    "           the host clock on the CPU)\n"
    "--cache-stats: at the end, programs compiled, loaded from the disk cache\n"
    "               (KILN_CACHE_DIR), MLIR contexts created, whether the compiler\n"
    "               library (libkiln-compiler.so, MLIR) was loaded, kernels built\n"
    "               with a tuned config (KILN_AUTOTUNE) and candidates benchmarked,\n"
    "               and the time of each phase of the run (device, program, ...)\n"
    "--dump-dir DIR: every stage of the compile under DIR/<key folder>/, as\n"
    "                KILN_DUMP_DIR does (docs/dumps.md; KILN_OVERRIDE_DIR takes\n"
    "                hand-edited stages back)\n";

struct Options {
  std::string program, entry = "main", device = "cpu", outputDir, dumpDir, chip;
  std::array<uint32_t, 3> cooperativeMatrix = {0, 0, 0};
  std::vector<std::string> inputs;
  uint64_t seed = 0;
  int bench = 0;
  bool print = false, compileOnly = false, cubin = false, tf32 = false, cacheStats = false;
};

struct UsageError {
  std::string message;
};

template <typename T> T parseNumber(const std::string &flag, const std::string &text) {
  T value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size())
    throw UsageError{flag + " expects a number, got '" + text + "'"};
  return value;
}

Options parseArgs(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        throw UsageError{arg + " needs a value"};
      return argv[++i];
    };
    if (arg == "--entry") o.entry = value();
    else if (arg == "--device") o.device = value();
    else if (arg == "--input") o.inputs.push_back(value());
    else if (arg == "--seed") o.seed = parseNumber<uint64_t>(arg, value());
    else if (arg == "--output-dir") o.outputDir = value();
    else if (arg == "--print") o.print = true;
    else if (arg == "--bench") {
      o.bench = parseNumber<int>(arg, value());
      if (o.bench < 1)
        throw UsageError{"--bench expects a positive count"};
    } else if (arg == "--dump-dir") o.dumpDir = value();
    else if (arg == "--compile-only") o.compileOnly = true;
    else if (arg == "--chip") o.chip = value();
    else if (arg == "--cooperative-matrix") {
      std::string shape = value();
      std::istringstream in(shape);
      std::string size;
      for (uint32_t &s : o.cooperativeMatrix) {
        if (!std::getline(in, size, 'x'))
          throw UsageError{arg + " expects MxNxK, got '" + shape + "'"};
        s = parseNumber<uint32_t>(arg, size);
      }
      if (!in.eof() || o.cooperativeMatrix[0] == 0 || o.cooperativeMatrix[1] == 0 ||
          o.cooperativeMatrix[2] == 0)
        throw UsageError{arg + " expects MxNxK of positive sizes, got '" + shape + "'"};
    }
    else if (arg == "--cubin") o.cubin = true;
    else if (arg == "--tf32") o.tf32 = true;
    else if (arg == "--cache-stats") o.cacheStats = true;
    else if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (arg.starts_with("-")) throw UsageError{"unknown option " + arg};
    else if (o.program.empty()) o.program = arg;
    else throw UsageError{"more than one program given ('" + o.program + "', '" + arg + "')"};
  }
  if (o.program.empty())
    throw UsageError{"no program given"};
  if ((!o.chip.empty() || o.cooperativeMatrix[0] != 0) && !o.compileOnly)
    throw UsageError{"--chip and --cooperative-matrix only go with --compile-only"};
  return o;
}

template <typename T, typename Next> void fillWith(HostTensor &t, Next next) {
  T *p = t.as<T>();
  for (int64_t i = 0, n = t.numElements(); i < n; ++i)
    p[i] = static_cast<T>(next());
}

/// Random inputs: floats uniform in [-1, 1), ints in [0, 10), bools 0/1.
HostTensor randomTensor(const TensorSignature &s, std::mt19937_64 &rng) {
  HostTensor t(s.dtype, s.shape);
  std::uniform_real_distribution<double> realDist(-1.0, 1.0);
  std::uniform_int_distribution<int> smallDist(0, 9);
  auto real = [&] { return realDist(rng); };
  auto small = [&] { return smallDist(rng); };
  switch (s.dtype) {
  case DType::F64: fillWith<double>(t, real); break;
  case DType::F32: fillWith<float>(t, real); break;
  case DType::F16:
    fillWith<uint16_t>(t, [&] { return floatToHalf(static_cast<float>(real())); });
    break;
  case DType::BF16:
    fillWith<uint16_t>(t, [&] { return floatToBf16(static_cast<float>(real())); });
    break;
  case DType::F8E4M3FN:
  case DType::F8E5M2:
    fillWith<uint8_t>(t, [&] { return floatToFloat8(static_cast<float>(real()), s.dtype); });
    break;
  case DType::Bool: fillWith<uint8_t>(t, [&] { return small() & 1; }); break;
  case DType::I8: fillWith<int8_t>(t, small); break;
  case DType::I16: fillWith<int16_t>(t, small); break;
  case DType::I32: fillWith<int32_t>(t, small); break;
  case DType::I64: fillWith<int64_t>(t, small); break;
  case DType::U8: fillWith<uint8_t>(t, small); break;
  case DType::U16: fillWith<uint16_t>(t, small); break;
  case DType::U32: fillWith<uint32_t>(t, small); break;
  case DType::U64: fillWith<uint64_t>(t, small); break;
  }
  return t;
}

/// NumPy has no bf16 and no f8: they go in and out of .npy files as f32.
bool npyAsF32(DType type) { return type == DType::BF16 || isFloat8DType(type); }
HostTensor narrowedFromF32(const HostTensor &f, DType type) {
  HostTensor t(type, f.shape);
  for (int64_t i = 0; i < f.numElements(); ++i) {
    float v = f.as<float>()[i];
    if (type == DType::BF16)
      t.as<uint16_t>()[i] = floatToBf16(v);
    else
      t.as<uint8_t>()[i] = floatToFloat8(v, type);
  }
  return t;
}
HostTensor widenedToF32(const HostTensor &n) {
  HostTensor t(DType::F32, n.shape);
  for (int64_t i = 0; i < n.numElements(); ++i)
    t.as<float>()[i] = static_cast<float>(n.elementAsDouble(i));
  return t;
}

void printTensor(size_t index, const HostTensor &t) {
  std::printf("result%zu: %s\n", index, describeTensorType(t.dtype, t.shape).c_str());
  int64_t n = t.numElements(), shown = std::min<int64_t>(n, 64);
  std::ostringstream os;
  os << "  [";
  for (int64_t i = 0; i < shown; ++i)
    os << (i ? ", " : "") << t.elementAsDouble(i);
  os << (shown < n ? ", ...]" : "]");
  std::printf("%s\n", os.str().c_str());
}

int fail(const Error &e) {
  std::fprintf(stderr, "kiln-run: %s error: %s\n", errorKindName(e.kind),
               e.message.c_str());
  return e.kind == ErrorKind::InvalidArgument || e.kind == ErrorKind::OutOfMemory
             ? 2
             : 1;
}

/// `what`, made of `tensors`, could not be allocated in host memory.
Error tooLarge(const std::string &what,
               const std::vector<TensorSignature> &tensors) {
  std::string types;
  for (const TensorSignature &t : tensors)
    types += (types.empty() ? "" : ", ") + t.describe();
  return {ErrorKind::OutOfMemory,
          "not enough host memory for " + what + " (" + types + ")"};
}

/// Creates the directory `dir` given with `flag` up front: a path that cannot
/// hold files is bad usage, reported before any work is done.
Expected<void> prepareDirectory(const std::string &flag, const std::string &dir) {
  if (dir.empty())
    return {};
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (!ec && !std::filesystem::is_directory(dir, ec))
    ec = std::make_error_code(std::errc::not_a_directory);
  if (ec)
    return makeError(ErrorKind::InvalidArgument,
                     flag + " " + dir + ": cannot create the directory: " + ec.message());
  return {};
}

using Clock = std::chrono::steady_clock;
double msSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

/// The CUDA toolkit's ptxas where it is, else whatever PATH finds.
std::string ptxasPath() {
  std::string path = cudaToolkitFile("bin/ptxas");
  return path.empty() ? "ptxas" : path;
}

/// " (parse 1.0, ...)" and the end of the line.
void printStageTimes(const std::vector<StageTime> &stages) {
  std::printf(" (");
  for (size_t i = 0; i < stages.size(); ++i)
    std::printf("%s%s %.1f", i ? ", " : "", stages[i].stage.c_str(), stages[i].milliseconds);
  std::printf(")\n");
}

/// `runs` host-timed runs of `program` (inputs and results copied each
/// run), then `runs` device-timed runs of it on resident tensors (`source`
/// and `options` find it in the backend's kernel cache), after a warm-up.
Expected<void> bench(int runs, Backend &backend, const Program &program, std::string_view source,
                     const CompileOptions &options, const std::vector<HostTensor> &inputs) {
  auto report = [&](const char *what, std::vector<double> &times) {
    std::sort(times.begin(), times.end());
    std::printf("%s: %d runs, median %.4f ms, min %.4f ms\n", what, runs,
                times[times.size() / 2], times.front());
  };
  std::vector<double> host, device;
  for (int i = 0; i < runs; ++i) {
    auto start = Clock::now();
    if (auto r = program.run(inputs); !r)
      return std::unexpected(r.error());
    host.push_back(msSince(start));
  }
  report("bench", host);
  std::vector<Tensor> resident;
  for (const HostTensor &input : inputs) {
    auto t = backend.upload(input);
    if (!t)
      return std::unexpected(t.error());
    resident.push_back(std::move(*t));
  }
  auto launch = [&]() -> Expected<void> {
    auto r = backend.run(source, resident, options);
    if (!r)
      return std::unexpected(r.error());
    return {};
  };
  if (auto ok = launch(); !ok)
    return ok;
  std::string clock;
  for (int i = 0; i < runs; ++i) {
    auto d = backend.profile(launch);
    if (!d)
      return std::unexpected(d.error());
    if (!d->milliseconds)
      return makeError(ErrorKind::Unsupported, backend.name() + " could not time a run (" +
                                                   d->clock + ")");
    device.push_back(*d->milliseconds);
    clock = d->clock;
  }
  report(("bench, resident on the device (" + clock + ")").c_str(), device);
  return backend.sync();
}

int runMain(const Options &o) {
  std::error_code ec;
  if (std::filesystem::is_directory(o.program, ec))
    return fail({ErrorKind::InvalidArgument, o.program + ": is a directory, not a program"});
  std::ifstream file(o.program);
  if (!file)
    return fail({ErrorKind::InvalidArgument, o.program + ": cannot open file"});
  for (auto [flag, dir] : {std::pair{"--output-dir", &o.outputDir},
                           std::pair{"--dump-dir", &o.dumpDir}})
    if (auto ok = prepareDirectory(flag, *dir); !ok)
      return fail(ok.error());
  std::stringstream source;
  source << file.rdbuf();

  auto device = DeviceId::parse(o.device);
  if (!device)
    return fail(device.error());
  if ((!o.chip.empty() || o.cubin || o.tf32) && device->type != DeviceType::Cuda)
    return fail({ErrorKind::InvalidArgument,
                 "--chip, --cubin and --tf32 only go with --device cuda"});
  if (o.cooperativeMatrix[0] != 0 && device->type != DeviceType::Vulkan)
    return fail({ErrorKind::InvalidArgument, "--cooperative-matrix only goes with --device vulkan"});
  // --compile-only opens no device: it compiles for the kind's default
  // one (PTX for --chip, default sm_90; SPIR-V for the features every
  // supported Vulkan device has; the host CPU).
  if (o.compileOnly) {
    auto compiler = loadCompiler();
    if (!compiler)
      return fail(compiler.error());
    CompileOptions options;
    options.entry = o.entry;
    if (!o.dumpDir.empty())
      options.dumpDir = o.dumpDir;
    if (!o.chip.empty())
      options.chip = o.chip;
    options.ptxas = o.cubin ? ptxasPath() : "";
    options.tf32 = o.tf32;
    options.vulkan.f16CooperativeMatrix = o.cooperativeMatrix;
    auto start = Clock::now();
    auto compiled = targetKind(device->type).compileOffline(**compiler, source.str(), options);
    if (!compiled) {
      Error e = compiled.error();
      e.message = o.program + ": " + e.message;
      return fail(e);
    }
    std::printf("compiled %s for %s: %zu kernel(s), %s in %.1f ms", o.program.c_str(),
                compiled->target.c_str(), compiled->program.kernelCount,
                compiled->artifacts.c_str(), msSince(start));
    printStageTimes(compiled->program.stageTimes);
    return 0;
  }
  // Where a process's time goes (--cache-stats): a warm start is mostly
  // device set-up and loading, which the compile and run lines leave out.
  std::vector<std::pair<const char *, double>> phases;
  auto phaseStart = Clock::now();
  auto endPhase = [&](const char *name) {
    phases.emplace_back(name, msSince(phaseStart));
    phaseStart = Clock::now();
  };
  // A bench runs on device-resident tensors through a Backend (queue,
  // pool, profiler), whose engine then serves the whole run; a plain run
  // needs only an engine.
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Engine> ownEngine;
  if (o.bench > 0) {
    auto created = Backend::create(*device);
    if (!created)
      return fail(created.error());
    backend = std::move(*created);
  } else {
    auto created = Engine::create(*device);
    if (!created)
      return fail(created.error());
    ownEngine = std::move(*created);
  }
  Engine &engine = backend ? backend->kernels() : *ownEngine;
  endPhase("device");
  auto start = Clock::now();
  CompileOptions options;
  options.entry = o.entry;
  if (!o.dumpDir.empty())
    options.dumpDir = o.dumpDir;
  options.ptxas = o.cubin ? ptxasPath() : "";
  options.tf32 = o.tf32;
  auto program = engine.compile(source.str(), options);
  if (!program) {
    Error e = program.error();
    e.message = o.program + ": " + e.message;
    return fail(e);
  }
  double compileMs = msSince(start);
  endPhase("program");
  bool fromDisk = engine.diskCacheHits() > 0;
  std::printf("%s %s for %s%s: %zu kernel(s) in %.1f ms", fromDisk ? "loaded" : "compiled",
              o.program.c_str(), device->toString().c_str(),
              fromDisk ? " from the disk cache" : "", (*program)->kernelCount(), compileMs);
  printStageTimes((*program)->stageTimes());
  // Printed however the run ends, once the program is there.
  struct CacheStats {
    const Options &o;
    const Engine &engine;
    const std::vector<std::pair<const char *, double>> &phases;
    ~CacheStats() {
      if (!o.cacheStats)
        return;
      std::printf("phases:");
      for (auto [name, ms] : phases)
        std::printf(" %s %.1f ms", name, ms);
      std::printf("\n");
      std::printf("kernel cache: %zu compiled, %zu from disk, %zu MLIR context(s), "
                  "compiler library %s, CPU JIT %s; autotune: %zu tuned kernel(s), "
                  "%zu benchmark(s)\n",
                  engine.compileCount(), engine.diskCacheHits(), Engine::mlirContextsCreated(),
                  compilerLibraryLoaded() ? "loaded" : "not loaded",
                  CpuDevice::jitLibraryLoaded() ? "loaded" : "not loaded",
                  Autotuner::tunedLookupHits(), Autotuner::benchmarksRun());
    }
  } cacheStats{o, engine, phases};

  const auto &want = (*program)->inputs();
  std::vector<HostTensor> inputs;
  if (o.inputs.empty()) {
    for (size_t i = 0; i < want.size(); ++i)
      if (want[i].isDynamic())
        return fail({ErrorKind::InvalidArgument,
                     "input #" + std::to_string(i) + " is " + want[i].describe() +
                         ": a program with dynamic dims needs its inputs (--input), "
                         "or --compile-only"});
    std::mt19937_64 rng(o.seed);
    for (size_t i = 0; i < want.size(); ++i) {
      try {
        inputs.push_back(randomTensor(want[i], rng));
      } catch (const std::bad_alloc &) {
        return fail(tooLarge("input #" + std::to_string(i), {want[i]}));
      }
    }
  } else {
    if (o.inputs.size() != want.size())
      return fail({ErrorKind::InvalidArgument,
                   "the program takes " + std::to_string(want.size()) +
                       " input(s), " + std::to_string(o.inputs.size()) + " given"});
    for (size_t i = 0; i < o.inputs.size(); ++i) {
      auto t = readNpy(o.inputs[i]);
      if (!t)
        return fail(t.error());
      if (npyAsF32(want[i].dtype) && t->dtype == DType::F32)
        *t = narrowedFromF32(*t, want[i].dtype);
      // Dynamic dims are checked by the run, which names them.
      if (t->dtype != want[i].dtype || (!want[i].isDynamic() && t->shape != want[i].shape))
        return fail({ErrorKind::InvalidArgument,
                     o.inputs[i] + ": input #" + std::to_string(i) + " is " +
                         describeTensorType(t->dtype, t->shape) +
                         ", the program expects " + want[i].describe()});
      inputs.push_back(std::move(*t));
    }
  }

  endPhase("inputs");
  start = Clock::now();
  Expected<std::vector<HostTensor>> outputs;
  try {
    outputs = (*program)->run(inputs);
  } catch (const std::bad_alloc &) {
    return fail(tooLarge("the results", (*program)->outputs()));
  }
  if (!outputs)
    return fail(outputs.error());
  std::printf("ran in %.3f ms\n", msSince(start));
  endPhase("run");
  if (o.bench > 0) {
    if (auto ok = bench(o.bench, *backend, **program, source.str(), options, inputs); !ok)
      return fail(ok.error());
    endPhase("bench");
  }
  for (size_t i = 0; i < outputs->size(); ++i) {
    HostTensor &t = (*outputs)[i];
    if (o.print)
      printTensor(i, t);
    if (!o.outputDir.empty()) {
      std::string path = o.outputDir + "/result" + std::to_string(i) + ".npy";
      auto written = writeNpy(path, npyAsF32(t.dtype) ? widenedToF32(t) : t);
      if (!written)
        return fail(written.error());
    }
  }
  endPhase("results");
  // The program and the device are left for the driver to reclaim when
  // main leaves by _Exit, which is faster than tearing a CUDA context down.
  static auto *keptProgram = new auto(std::move(*program));
  static auto *keptEngine = new auto(std::move(ownEngine));
  static auto *keptBackend = new auto(std::move(backend));
  (void)keptProgram, (void)keptEngine, (void)keptBackend;
  return 0;
}

} // namespace

/// Leaves without libcuda's exit handlers (about 100 ms on the H200,
/// docs/caches.md) or other static destructors, after what they would say.
[[noreturn]] static void leave(int status) {
  finishCompilerLibrary();
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(status);
}

int main(int argc, char **argv) {
  try {
    leave(runMain(parseArgs(argc, argv)));
  } catch (const UsageError &e) {
    std::fprintf(stderr, "kiln-run: %s\n%s", e.message.c_str(), kUsage);
    return 2;
  } catch (const std::bad_alloc &) {
    return fail({ErrorKind::OutOfMemory, "host memory is exhausted"});
  } catch (const std::exception &e) {
    std::fprintf(stderr, "kiln-run: internal error: %s\n", e.what());
    return 1;
  }
}
