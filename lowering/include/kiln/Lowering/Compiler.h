//===- Compiler.h - kiln programs -> CPU objects, PTX or SPIR-V -*- C++ -*-===//
#ifndef KILN_LOWERING_COMPILER_H
#define KILN_LOWERING_COMPILER_H

#include "kiln/Lowering/CUDA/MatmulTunables.h"
#include "kiln/runtime/common/DType.h"
#include "kiln/runtime/common/Error.h"
#include "kiln/runtime/common/GpuPlan.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

/// A dim known only at run time is `dynamicDim(s)` (negative): `s` names
/// the run-time size, and every dim with the same `s` must have the same
/// size (docs/dynamic-shapes.md).
constexpr int64_t dynamicDim(int64_t symbol) { return -1 - symbol; }
constexpr int64_t sizeSymbolOf(int64_t dim) { return -1 - dim; }

struct TensorSignature {
  DType dtype;
  std::vector<int64_t> shape; // sizes, or dynamicDim(symbol)
  bool isDynamic() const {
    for (int64_t d : shape)
      if (d < 0)
        return true;
    return false;
  }
  /// "tensor<?x4xf32>" for diagnostics.
  std::string describe() const {
    std::string s = "tensor<";
    for (int64_t d : shape)
      s += (d < 0 ? std::string("?") : std::to_string(d)) + "x";
    return s + std::string(dtypeName(dtype)) + ">";
  }
};

/// How many places a sliding window takes along a dim of `n` elements
/// padded by `padding` in all: (n + padding - span) / stride + 1, where
/// the window (`span` elements, dilation included) fits at all.
struct SizeWindow {
  int64_t padding = 0, span = 1, stride = 1;
  /// nullopt where n + padding < span (or it overflows).
  std::optional<int64_t> count(int64_t n) const {
    int64_t padded;
    if (__builtin_add_overflow(n, padding, &padded) || padded < span)
      return std::nullopt;
    return (padded - span) / stride + 1;
  }
  bool operator==(const SizeWindow &) const = default;
};

/// What a shape class says beyond "dims of one run-time size are equal"
/// (docs/dynamic-shapes.md): `dim` (a size, or dynamicDim(s)) is the sum of
/// `terms` (sizes and dynamicDim symbols: a padded or concatenated dim), is
/// equal to it, or is at least it (what a slice or a shorter index reads).
/// With a `window`, the value is the window's count over that sum (a conv's
/// or pool's output dim). A Sum defines its run-time size, which no input
/// then binds; rules come in the order a run evaluates them (a Sum after
/// those it reads).
struct SizeRule {
  enum class Kind { Sum, Equal, AtLeast };
  Kind kind;
  int64_t dim;
  std::vector<int64_t> terms;
  std::string origin; // "program:3:8: 'kiln.pad'", for errors
  std::optional<SizeWindow> window = std::nullopt;
};

struct StageTime {
  std::string stage;
  double milliseconds;
};

/// What every compiled program says about itself.
struct CompiledProgram {
  std::vector<TensorSignature> inputs, outputs;
  std::vector<SizeRule> sizeRules;
  size_t kernelCount = 0;
  std::vector<StageTime> stageTimes;
  /// Hand-edited stages (CompileOptions::overrideDir) went into it: it is
  /// never kept in a kernel cache under its program's key.
  bool overridden = false;
  /// The tune keys of its tunable kernels (docs/autotune.md).
  std::vector<std::string> tuneKeys;
  /// Tune key -> the candidate its kernel took untuned, where that depends
  /// on the shape (the tuner times it first).
  std::map<std::string, std::string> untunedConfigs;
};

/// For the host CPU: a relocatable object with `_kiln_entry`.
struct CompiledCpuProgram : CompiledProgram {
  std::string object;
};

/// For CUDA and Vulkan: PTX (or cubin) or SPIR-V modules and the launches
/// that run them.
struct CompiledGpuProgram : CompiledProgram {
  GpuPlan plan;
};

/// The optional Vulkan features SPIR-V for a device may use; the default is
/// what lavapipe and NVIDIA's driver both have. The backend fills it from
/// the device's properties.
struct VulkanTarget {
  bool float16 = true, float64 = true, int8 = true, int16 = true, int64 = true,
       storage8 = true, storage16 = true;
  std::array<uint32_t, 3> maxWorkgroupCount = {65535, 65535, 65535};
  /// Float widths the driver preserves NaN/inf for (float controls); none
  /// by default, as not every device can.
  bool preserveNan16 = false, preserveNan32 = false, preserveNan64 = false;
  /// Float widths the driver can keep subnormals of (float controls' denorm
  /// preserve); none by default.
  bool preserveDenorm16 = false, preserveDenorm32 = false, preserveDenorm64 = false;
  /// Storage buffers one kernel may bind (maxPerStageDescriptorStorageBuffers;
  /// lavapipe's 32 when compiling without a device).
  uint32_t maxStorageBuffers = 32;
  /// Loop iterations one invocation may run, 0 for no bound: lavapipe
  /// (llvmpipe) ends an invocation's loops after 65535 in all, silently, so
  /// there kernels whose threads loop over a run of a program's size
  /// (attention's keys) keep within half of it. Bounded when compiling
  /// without a device (lavapipe's limits).
  uint32_t maxInvocationLoopIterations = 32768;
  /// Invocations per subgroup (32 on NVIDIA, 8 on lavapipe).
  uint32_t subgroupSize = 32;
  /// Workgroup memory and invocations one workgroup may have
  /// (maxComputeSharedMemorySize, maxComputeWorkGroupInvocations): what the
  /// cooperative-matrix matmul's tiling must fit. NVIDIA's 48 KiB by
  /// default, the devices with cooperative matrices having at least that.
  uint32_t maxWorkgroupBytes = 49152, maxWorkgroupInvocations = 1024;
  /// Multiprocessors the device says it has (0: unknown): the SIMT
  /// matmul narrows its tiles and splits K to fill them, as on CUDA.
  uint32_t multiprocessors = 0;
  /// Atomic f32/f64 adds on storage buffers (VK_EXT_shader_atomic_float):
  /// scatter_add's atomics; none by default, as not every device has them.
  bool float32AtomicAdd = false, float64AtomicAdd = false;
  /// Atomic i64 adds on storage buffers (VK_KHR_shader_atomic_int64, with
  /// Int64): i64 scatter_add's atomics.
  bool int64AtomicAdd = false;
  /// The device's f16 x f16 -> f32 cooperative-matrix shape (M, N, K) that
  /// f16 matmuls run on (VK_KHR_cooperative_matrix, kiln-spirv-tile-matmul);
  /// zeros: none, f16 matmuls take the SIMT kernel (kiln-spirv-simt-matmul).
  std::array<uint32_t, 3> f16CooperativeMatrix = {0, 0, 0};
  /// KILN_VULKAN_COOPERATIVE_MATRIX=0 leaves cooperative matrices unused
  /// even where the device has them (read once, by the SPIR-V compile).
  static bool cooperativeMatricesEnabled() {
    static const bool enabled = switchSetting("KILN_VULKAN_COOPERATIVE_MATRIX", true);
    return enabled;
  }
};

/// KILN_DUMP_DIR and KILN_OVERRIDE_DIR (docs/dumps.md), read at first use:
/// every CompileOptions starts from them. Here, not in the compiler
/// library, as the backend's options need them before it is loaded.
struct DumpEnvironment {
  std::string dumpDir, overrideDir;
  static const DumpEnvironment &get() {
    static const DumpEnvironment environment = [] {
      auto variable = [](const char *name) {
        const char *value = std::getenv(name);
        return std::string(value ? value : "");
      };
      return DumpEnvironment{variable("KILN_DUMP_DIR"), variable("KILN_OVERRIDE_DIR")};
    }();
    return environment;
  }
};

struct CompileOptions {
  std::string entry = "main";
  /// Every stage of every compile is written to DIR/<key folder>/, and each
  /// compile is recorded in DIR/manifest-<pid>.json; empty: no dumps.
  std::string dumpDir = DumpEnvironment::get().dumpDir;
  /// Hand-edited stage files in the same layout replace the compiler's
  /// output at their stage; empty: none.
  std::string overrideDir = DumpEnvironment::get().overrideDir;
  unsigned numThreads = 0; // CPU: 0 means the machine's hardware threads
  /// CUDA: the device's SMs, which the matmul kernels fill (split-K, the
  /// persistent grid); 0: the chip's data-center part's (132 on sm_90).
  unsigned multiprocessors = 0;
  std::string chip = "sm_90"; // CUDA
  /// CUDA: assemble each PTX module to a cubin with this ptxas (a path or a
  /// name on PATH) instead of leaving PTX to the driver's JIT. A device
  /// fills it in where the caller left it empty (devicePtxas).
  std::string ptxas;
  /// CUDA: where `ptxas` fails, or its cubin does not load, the device
  /// compiles again through the driver's JIT, with a warning (the device's
  /// own choice of ptxas), instead of failing (the caller's).
  bool ptxasFallsBackToJit = false;
  /// CUDA: tiling of the tensor-core matmul kernel (kiln-cuda-tile-matmul).
  CudaMmaMatmulTunables mma;
  /// CUDA: f32 matmuls on tensor cores with inputs as tf32 (10-bit
  /// mantissa), as torch's allow_tf32.
  bool tf32 = false;
  /// CUDA: f16/bf16 matmuls on wgmma when the chip is sm_90a (off with
  /// KILN_CUDA_WGMMA=0: mma.sync).
  bool wgmma = CudaWgmmaMatmulTunables::enabledByEnvironment();
  VulkanTarget vulkan;
  /// Tuned configurations by tune key text (TuneDatabase::table): a kernel
  /// whose key is here is built with that config, others with defaults.
  TuneTable tuned;

  /// The options that change generated code, but for the tune table, for
  /// kernel cache keys: a program depends on the configs of its own tune
  /// keys alone (tunedConfigsText), so tuning another kernel keeps it.
  std::string codegenKey() const {
    std::string sms = multiprocessors ? ",sms=" + std::to_string(multiprocessors) : "";
    return "threads=" + std::to_string(numThreads) + sms + ",mma=" + mma.key() +
           (tf32 ? ",tf32" : "") + (wgmma ? "" : ",nowgmma") + (ptxas.empty() ? "" : ",cubin");
  }
  /// "key=config;" for each of `keys` in order, the config empty where the
  /// table has none: what a program with these tune keys takes of it.
  std::string tunedConfigsText(std::vector<std::string> keys) const {
    std::sort(keys.begin(), keys.end());
    std::string text;
    for (const std::string &key : keys) {
      auto it = tuned.find(key);
      text += key + "=" + (it == tuned.end() ? "" : it->second) + ";";
    }
    return text;
  }
  /// A digest of the whole tune table, "" when it is empty: with
  /// codegenKey, a key for what a compile may produce before its tune keys
  /// are known.
  std::string tuneTableKey() const {
    std::vector<std::string> keys;
    for (const auto &entry : tuned)
      keys.push_back(entry.first);
    return tuned.empty() ? "" : ",tune=" + stableHash(tunedConfigsText(std::move(keys)));
  }
};

/// A program parsed and verified once (Compiler::parse): its canonical text
/// keys kernel caches, and one compile for any target then consumes it.
/// Lives no longer than the Compiler that parsed it.
class ParsedProgram {
public:
  /// What the compiler keeps of a parse (its MLIR module, in the compiler
  /// library): polymorphic, so that the program's owner needs no MLIR.
  struct Module {
    virtual ~Module() = default;
  };
  ParsedProgram(std::unique_ptr<Module> module, std::string canonical,
                double parseMilliseconds)
      : module(std::move(module)), canonical(std::move(canonical)),
        parseMilliseconds(parseMilliseconds) {}
  /// Generic op syntax without locations, so that reformatted text of one
  /// program has one canonical text.
  const std::string &canonicalText() const { return canonical; }
  Module &parsed() const { return *module; }
  double parseTime() const { return parseMilliseconds; }

private:
  std::unique_ptr<Module> module;
  std::string canonical;
  double parseMilliseconds;
};

/// Compiles kiln programs; one MLIR context, reused across compiles. Bad
/// programs give InvalidArgument with the parser's or verifier's message;
/// what a target cannot run yet gives Unsupported. An interface: the
/// implementation (and all of MLIR) lives in the compiler library,
/// libkiln-compiler.so, which the backend loads at its first compile
/// (kiln/backend/CompilerLibrary.h), so that a process whose kernels all
/// come from the disk cache never loads MLIR. Each target's driver lives in
/// its lowering folder (CPU/CpuCompile.cpp, ...).
class Compiler {
public:
  virtual ~Compiler() = default;
  /// Parses and verifies `source`: the one parse of a compile.
  virtual Expected<ParsedProgram> parse(std::string_view source) = 0;
  /// A relocatable object for the host CPU.
  virtual Expected<CompiledCpuProgram> compileForCpu(ParsedProgram program,
                                                     const CompileOptions &options) = 0;
  /// Needs no GPU: PTX for `options.chip` (cubin with `options.ptxas`).
  virtual Expected<CompiledGpuProgram> compileForCuda(ParsedProgram program,
                                                      const CompileOptions &options) = 0;
  /// Needs no device: SPIR-V for `options.vulkan`, each module validated by
  /// SPIRV-Tools; a type the device lacks is Unsupported, naming the feature.
  virtual Expected<CompiledGpuProgram> compileForVulkan(ParsedProgram program,
                                                        const CompileOptions &options) = 0;
  /// Programs this compiler has parsed (tests check one parse per compile).
  virtual size_t parseCount() const = 0;

  /// The same from program text: parse, then compile. (An implementation
  /// overrides the ParsedProgram forms; callers use a Compiler&.)
  Expected<CompiledCpuProgram> compileForCpu(std::string_view source,
                                              const CompileOptions &options) {
    return parseAndCompile(source, options, &Compiler::compileForCpu);
  }
  Expected<CompiledGpuProgram> compileForCuda(std::string_view source,
                                               const CompileOptions &options) {
    return parseAndCompile(source, options, &Compiler::compileForCuda);
  }
  Expected<CompiledGpuProgram> compileForVulkan(std::string_view source,
                                                 const CompileOptions &options) {
    return parseAndCompile(source, options, &Compiler::compileForVulkan);
  }

private:
  template <typename Compiled>
  Expected<Compiled> parseAndCompile(std::string_view source, const CompileOptions &options,
                                     Expected<Compiled> (Compiler::*compile)(
                                         ParsedProgram, const CompileOptions &)) {
    auto program = parse(source);
    if (!program)
      return std::unexpected(program.error());
    return (this->*compile)(std::move(*program), options);
  }
};

/// A new compiler. Defined in the compiler library: for code that links
/// it (kiln-opt's kin, tests, benchmarks); the backend loads it instead.
std::unique_ptr<Compiler> createCompiler();

} // namespace kiln

#endif
