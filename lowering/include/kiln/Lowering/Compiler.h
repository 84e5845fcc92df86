//===- Compiler.h - kiln programs -> CPU object code or PTX -----*- C++ -*-===//
#ifndef KILN_LOWERING_COMPILER_H
#define KILN_LOWERING_COMPILER_H

#include "kiln/runtime/common/Error.h"
#include "kiln/runtime/common/GpuPlan.h"
#include "kiln/runtime/common/DType.h"
#include "kiln/runtime/vulkan/VulkanDevice.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

struct TensorSignature {
  DType dtype;
  std::vector<int64_t> shape;
};

struct StageTime {
  std::string stage;
  double milliseconds;
};

/// What every compiled program says about itself.
struct CompiledProgram {
  std::vector<TensorSignature> inputs, outputs;
  size_t kernelCount = 0;
  std::vector<StageTime> stageTimes;
};

/// For the host CPU: a relocatable object with `_kiln_entry`.
struct CompiledCpuProgram : CompiledProgram {
  std::string object;
};

/// For CUDA and Vulkan: PTX or SPIR-V modules and the launches that run them.
struct CompiledGpuProgram : CompiledProgram {
  GpuPlan plan;
};

/// The optional Vulkan features SPIR-V for a device may use; the default is
/// what lavapipe and NVIDIA's driver both have.
struct VulkanTarget {
  bool float16 = true, float64 = true, int8 = true, int16 = true, int64 = true,
       storage8 = true, storage16 = true;
  std::array<uint32_t, 3> maxWorkgroupCount = {65535, 65535, 65535};
  /// Float widths the driver preserves NaN/inf for (float controls); none
  /// by default, as not every device can.
  bool preserveNan16 = false, preserveNan32 = false, preserveNan64 = false;
  /// Storage buffers one kernel may bind (maxPerStageDescriptorStorageBuffers;
  /// lavapipe's 32 when compiling without a device).
  uint32_t maxStorageBuffers = 32;
  static VulkanTarget of(const VulkanDeviceProperties &device);
};

struct CompileOptions {
  std::string entry = "main";
  std::string dumpDir;     // when set, every stage is written there
  unsigned numThreads = 0; // CPU: 0 means the machine's hardware threads
  std::string chip = "sm_90"; // CUDA
  /// CUDA: assemble each PTX module to a cubin with this ptxas (a path or a
  /// name on PATH) instead of leaving PTX to the driver's JIT.
  std::string ptxas;
  /// CUDA: shape of the tensor-core matmul kernel (output columns per block,
  /// shared-memory stages); see kiln-gpu-tile-matmul.
  int64_t mmaTileN = 256, mmaStages = 2, mmaStepBytes = 128;
  /// CUDA: f32 matmuls on tensor cores with inputs as tf32 (10-bit
  /// mantissa), as torch's allow_tf32.
  bool tf32 = false;
  VulkanTarget vulkan;

  /// The options that change generated code, for kernel cache keys.
  std::string codegenKey() const {
    return "threads=" + std::to_string(numThreads) + ",mma=" + std::to_string(mmaTileN) +
           "x" + std::to_string(mmaStages) + "x" + std::to_string(mmaStepBytes) +
           (tf32 ? ",tf32" : "") +
           (ptxas.empty() ? "" : ",cubin");
  }
};

/// Compiles kiln programs. Owns one MLIR context, reused across compiles.
/// Bad programs give InvalidArgument with the parser's or verifier's
/// message; what a target cannot run yet gives Unsupported.
class Compiler {
public:
  Compiler();
  ~Compiler();
  Expected<CompiledCpuProgram> compileForCpu(std::string_view source,
                                             const CompileOptions &options);
  /// Needs no GPU: PTX for `options.chip`.
  Expected<CompiledGpuProgram> compileForCuda(std::string_view source,
                                              const CompileOptions &options);
  /// Needs no device: SPIR-V for `options.vulkan`, each module validated by
  /// SPIRV-Tools; a type the device lacks is Unsupported, naming the feature.
  Expected<CompiledGpuProgram> compileForVulkan(std::string_view source,
                                                const CompileOptions &options);
  /// The program in canonical form (generic op syntax, no locations), so
  /// that reformatted text of one program has one cache key.
  Expected<std::string> canonicalForm(std::string_view source);
  /// "cpu-<triple>-<cpu>+<features>": what generated code depends on.
  std::string targetFingerprint() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace kiln

#endif
