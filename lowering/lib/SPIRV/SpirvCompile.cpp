//===- SpirvCompile.cpp - the SPIR-V (Vulkan) target's compile driver ----===//
//
// The device's Vulkan features -> a SPIR-V target environment; fused kernels
// -> spirv.modules, serialised and validated by SPIRV-Tools before any
// driver sees them.
//
//===----------------------------------------------------------------------===//
#include "CompilerInternals.h"
#include "kiln/Lowering/SPIRV/Passes.h"

#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Target/SPIRV/Serialization.h"

#include <spirv-tools/libspirv.hpp>

#include <cstring>

using namespace mlir;

namespace kiln {

namespace {
/// The Vulkan feature a value of type `t` needs that `target` lacks.
std::optional<std::string> missingFeature(Type t, const VulkanTarget &target) {
  t = getElementTypeOrSelf(t);
  // bf16 is stored and handled as 16-bit integer bits (kiln-spirv-bf16-as-i16).
  if (t.isBF16())
    t = IntegerType::get(t.getContext(), 16);
  unsigned bits = t.isIntOrFloat() ? t.getIntOrFloatBitWidth() : 32;
  if (isa<FloatType>(t) && bits == 64 && !target.float64)
    return "shaderFloat64";
  if (isa<FloatType>(t) && bits == 16 && !(target.float16 && target.storage16))
    return target.float16 ? "storageBuffer16BitAccess" : "shaderFloat16";
  if (!isa<IntegerType>(t) && !isa<FloatType>(t))
    return std::nullopt;
  if (bits == 64 && !target.int64)
    return "shaderInt64";
  if (isa<IntegerType>(t) && bits == 16 && !(target.int16 && target.storage16))
    return target.int16 ? "storageBuffer16BitAccess" : "shaderInt16";
  if (bits <= 8 && !(target.int8 && target.storage8)) // also i1, stored as i8
    return target.int8 ? "storageBuffer8BitAccess" : "shaderInt8";
  return std::nullopt;
}

/// The cooperative-matrix shape f16 matmuls use on `target`: none where it
/// has none or KILN_VULKAN_COOPERATIVE_MATRIX=0.
std::vector<int64_t> f16CooperativeMatrix(const VulkanTarget &target) {
  if (target.f16CooperativeMatrix[0] == 0 || !VulkanTarget::cooperativeMatricesEnabled())
    return {};
  return {target.f16CooperativeMatrix.begin(), target.f16CooperativeMatrix.end()};
}

/// The SPIR-V target environment of a device's features.
SpirvPipelineOptions spirvEnvironment(const VulkanTarget &target) {
  SpirvPipelineOptions o;
  o.capabilities = {"Shader", "GroupNonUniform", "GroupNonUniformArithmetic"};
  o.extensions = {"SPV_KHR_storage_buffer_storage_class"};
  auto add = [&](bool have, std::initializer_list<const char *> caps) {
    if (have)
      o.capabilities.insert(o.capabilities.end(), caps.begin(), caps.end());
  };
  add(target.float16, {"Float16"});
  add(target.float64, {"Float64"});
  add(target.int8, {"Int8"});
  add(target.int16, {"Int16"});
  add(target.int64, {"Int64"});
  add(target.storage8, {"StorageBuffer8BitAccess"});
  add(target.storage16, {"StorageBuffer16BitAccess"});
  if (target.storage8)
    o.extensions.push_back("SPV_KHR_8bit_storage");
  if (target.storage16)
    o.extensions.push_back("SPV_KHR_16bit_storage");
  o.f16CooperativeMatrix = f16CooperativeMatrix(target);
  if (!o.f16CooperativeMatrix.empty()) {
    // MLIR's cooperative-matrix ops are SPIR-V 1.6's (Vulkan 1.3).
    o.version = "v1.6";
    o.capabilities.push_back("CooperativeMatrixKHR");
    o.extensions.push_back("SPV_KHR_cooperative_matrix");
  }
  if (target.float32AtomicAdd || target.float64AtomicAdd)
    o.extensions.push_back("SPV_EXT_shader_atomic_float_add");
  if (target.float32AtomicAdd) {
    o.capabilities.push_back("AtomicFloat32AddEXT");
    o.atomicAddTypes.push_back("f32");
  }
  if (target.float64AtomicAdd) {
    o.capabilities.push_back("AtomicFloat64AddEXT");
    o.atomicAddTypes.push_back("f64");
  }
  if (target.int64AtomicAdd) {
    o.capabilities.push_back("Int64Atomics");
    o.atomicAddTypes.push_back("i64");
  }
  o.subgroupSize = target.subgroupSize;
  o.maxWorkgroupBytes = target.maxWorkgroupBytes;
  o.maxWorkgroupInvocations = target.maxWorkgroupInvocations;
  o.multiprocessors = target.multiprocessors;
  o.maxGrid.assign(target.maxWorkgroupCount.begin(), target.maxWorkgroupCount.end());
  o.maxThreadIterations = target.maxInvocationLoopIterations;
  o.exactF32Division = target.int64;
  for (auto [width, nan, denorm] : {std::tuple{16, target.preserveNan16, target.preserveDenorm16},
                                     {32, target.preserveNan32, target.preserveDenorm32},
                                     {64, target.preserveNan64, target.preserveDenorm64}}) {
    if (nan)
      o.preserveNanWidths.push_back(width);
    if (denorm)
      o.preserveDenormWidths.push_back(width);
  }
  if (!o.preserveNanWidths.empty())
    o.capabilities.push_back("SignedZeroInfNanPreserve");
  if (!o.preserveDenormWidths.empty())
    o.capabilities.push_back("DenormPreserve");
  if (!o.preserveNanWidths.empty() || !o.preserveDenormWidths.empty())
    o.extensions.push_back("SPV_KHR_float_controls");
  return o;
}

/// What SPIR-V for `target` depends on, for the compile's key.
std::string describe(const VulkanTarget &target) {
  std::string text;
  for (bool feature : {target.float16, target.float64, target.int8, target.int16, target.int64,
                       target.storage8, target.storage16, target.preserveNan16,
                       target.preserveNan32, target.preserveNan64, target.preserveDenorm16,
                       target.preserveDenorm32, target.preserveDenorm64, target.float32AtomicAdd,
                       target.float64AtomicAdd, target.int64AtomicAdd})
    text += feature ? '1' : '0';
  for (uint32_t count : target.maxWorkgroupCount)
    text += " " + std::to_string(count);
  text += " buffers" + std::to_string(target.maxStorageBuffers);
  text += " loops" + std::to_string(target.maxInvocationLoopIterations);
  text += " subgroup" + std::to_string(target.subgroupSize) + " workgroup" +
          std::to_string(target.maxWorkgroupBytes) + "B" +
          std::to_string(target.maxWorkgroupInvocations) + " sms" +
          std::to_string(target.multiprocessors) + " coopmat";
  for (int64_t size : f16CooperativeMatrix(target)) {
    text += ' ';
    text += std::to_string(size);
  }
  return text;
}

/// The environment SPIRV-Tools validates `target`'s modules for: Vulkan 1.1,
/// or 1.3 where cooperative matrices make them SPIR-V 1.6.
spv_target_env validationEnvironment(const VulkanTarget &target) {
  return f16CooperativeMatrix(target).empty() ? SPV_ENV_VULKAN_1_1 : SPV_ENV_VULKAN_1_3;
}

/// Debian 12's SPIRV-Tools (2023.1) predates SPV_KHR_cooperative_matrix and
/// rejects its capability as unknown, so modules for a target that uses it
/// go unvalidated (docs/vulkan.md); every other module is validated.
bool canValidate(const VulkanTarget &target) { return f16CooperativeMatrix(target).empty(); }

/// SPIRV-Tools' verdict on `words`: empty when valid.
std::string validateSpirv(ArrayRef<uint32_t> words, spv_target_env environment) {
  spvtools::SpirvTools tools(environment);
  std::string messages;
  tools.SetMessageConsumer([&](spv_message_level_t, const char *,
                               const spv_position_t &position, const char *text) {
    messages += "word " + std::to_string(position.index) + ": " + text + "\n";
  });
  if (tools.Validate(words.data(), words.size()))
    return "";
  return messages.empty() ? "invalid SPIR-V" : messages;
}

/// `module` as stage files `name`.spv and (disassembled) `name`.spvasm,
/// replaced by an override of either (the assembly taking precedence); an
/// override must pass spirv-val, as the driver trusts what it is given.
Expected<void> stageSpirv(CompileSession &session, const std::string &name,
                          std::string &module, spv_target_env environment) {
  std::string binaryFile = name + ".spv", assemblyFile = name + ".spvasm";
  spvtools::SpirvTools tools(environment);
  std::string messages;
  tools.SetMessageConsumer([&](spv_message_level_t, const char *,
                               const spv_position_t &position, const char *text) {
    messages += std::to_string(position.line + 1) + ":" +
                std::to_string(position.column + 1) + ": error: " + text + "\n";
  });
  auto words = [](std::string_view bytes) {
    std::vector<uint32_t> w(bytes.size() / 4);
    std::memcpy(w.data(), bytes.data(), w.size() * 4);
    return w;
  };
  CompileDumps &dumps = session.dumps;
  dumps.stage(binaryFile, [&] { return module; });
  dumps.stage(assemblyFile, [&] {
    std::string text;
    tools.Disassemble(words(module), &text, SPV_BINARY_TO_TEXT_OPTION_INDENT);
    return text;
  });
  std::optional<CompileDumps::Override> edited;
  if (dumps.has(assemblyFile)) {
    if (dumps.has(binaryFile))
      dumps.ignore(binaryFile, assemblyFile + " replaces the same module");
    edited = dumps.take(assemblyFile);
    std::vector<uint32_t> assembled;
    if (edited && !tools.Assemble(edited->text, &assembled))
      return makeError(ErrorKind::InvalidArgument, "override " + edited->path + ":" + messages);
    if (edited)
      module.assign(reinterpret_cast<const char *>(assembled.data()), assembled.size() * 4);
  } else if ((edited = dumps.take(binaryFile))) {
    module = std::move(edited->text);
  }
  if (!edited)
    return {};
  const std::string &path = edited->path;
  if (module.size() % 4 != 0)
    return makeError(ErrorKind::InvalidArgument,
                     "override " + path + " is not SPIR-V (its size is not a multiple of 4)");
  if (std::string invalid = validateSpirv(words(module), environment); !invalid.empty())
    return makeError(ErrorKind::InvalidArgument,
                     "override " + path + ": spirv-val rejected it:\n" + invalid);
  return {};
}
} // namespace

Expected<CompiledGpuProgram> MlirCompiler::compileForVulkan(ParsedProgram program,
                                                        const CompileOptions &options) {
  CompiledGpuProgram result;
  CompileSession session(context, options, result, program, "vulkan",
                         describe(options.vulkan));
  // Fused chains are split to the storage buffers the device can bind.
  auto module = session.formKernels(options.vulkan.maxStorageBuffers);
  if (!module)
    return std::unexpected(module.error());
  std::optional<std::string> missing;
  module->walk([&](Operation *op) {
    for (TypeRange types : {TypeRange(op->getResultTypes()),
                            TypeRange(op->getOperandTypes())})
      for (Type t : types)
        if (!missing)
          missing = missingFeature(t, options.vulkan);
  });
  if (missing)
    return makeError(ErrorKind::Unsupported,
                     "vulkan: the device lacks " + *missing +
                         ", which this program's element types need");
  SpirvPipelineOptions pipeline = spirvEnvironment(options.vulkan);
  if (auto ok = session.lower(
          *module, "spirv",
          [&](OpPassManager &pm) { buildKernelsToSpirvPipeline(pm, pipeline); },
          "lowering to SPIR-V failed", "2-spirv.mlir");
      !ok)
    return std::unexpected(ok.error());
  llvm::StringMap<std::string> binaries;
  {
    auto timer = session.time("serialize");
    for (auto spv : module->getOps<spirv::ModuleOp>()) {
      SmallVector<uint32_t> words;
      if (failed(spirv::serialize(spv, words)))
        return session.fail("SPIR-V serialisation failed");
      std::string name = spv.getName()->str();
      if (std::string invalid = canValidate(options.vulkan)
                                    ? validateSpirv(words, validationEnvironment(options.vulkan))
                                    : "";
          !invalid.empty())
        return makeError(ErrorKind::Compile, "spirv-val rejected kernel module " +
                                                 name + ":\n" + invalid);
      StringRef kernelModule = StringRef(name).drop_front(strlen("__spv__"));
      binaries[kernelModule] = std::string(
          reinterpret_cast<const char *>(words.data()), words.size() * 4);
    }
  }
  if (auto ok = attachGpuPlan(session, *module, binaries, /*indexBytes=*/4, result); !ok)
    return std::unexpected(ok.error());
  for (size_t i = 0; i < result.plan.modules.size(); ++i)
    if (auto ok = stageSpirv(session, "3-kernel" + std::to_string(i), result.plan.modules[i],
                             validationEnvironment(options.vulkan));
        !ok)
      return std::unexpected(ok.error());
  // Each kernel binds each buffer once (kiln-gpu-sink-views); more buffers
  // than the device has would crash its driver, so they never reach it.
  for (const KernelLaunch &launch : result.plan.launches)
    if (launch.arguments.size() > options.vulkan.maxStorageBuffers)
      return makeError(ErrorKind::Unsupported,
                       "vulkan: kernel " + launch.kernel + " reads and writes " +
                           std::to_string(launch.arguments.size()) +
                           " distinct buffers, beyond the device's "
                           "maxPerStageDescriptorStorageBuffers (" +
                           std::to_string(options.vulkan.maxStorageBuffers) + ")");
  return session.finish(result);
}

} // namespace kiln
