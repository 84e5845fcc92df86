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

using namespace mlir;

namespace kiln {

namespace {
/// The Vulkan feature a value of type `t` needs that `target` lacks.
std::optional<std::string> missingFeature(Type t, const VulkanTarget &target) {
  t = getElementTypeOrSelf(t);
  if (t.isBF16())
    return "bf16 support (SPIR-V has no bf16 type; kiln does not emulate it "
           "on Vulkan yet)";
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
  o.maxGrid.assign(target.maxWorkgroupCount.begin(), target.maxWorkgroupCount.end());
  o.exactF32Division = target.int64;
  for (auto [width, preserved] : {std::pair{16, target.preserveNan16},
                                  {32, target.preserveNan32},
                                  {64, target.preserveNan64}})
    if (preserved)
      o.preserveNanWidths.push_back(width);
  if (!o.preserveNanWidths.empty()) {
    o.capabilities.push_back("SignedZeroInfNanPreserve");
    o.extensions.push_back("SPV_KHR_float_controls");
  }
  return o;
}

/// SPIRV-Tools' verdict on `words`: empty when valid.
std::string validateSpirv(ArrayRef<uint32_t> words) {
  spvtools::SpirvTools tools(SPV_ENV_VULKAN_1_1);
  std::string messages;
  tools.SetMessageConsumer([&](spv_message_level_t, const char *,
                               const spv_position_t &position, const char *text) {
    messages += "word " + std::to_string(position.index) + ": " + text + "\n";
  });
  if (tools.Validate(words.data(), words.size()))
    return "";
  return messages.empty() ? "invalid SPIR-V" : messages;
}
} // namespace

Expected<CompiledGpuProgram> MlirCompiler::compileForVulkan(ParsedProgram program,
                                                        const CompileOptions &options) {
  CompiledGpuProgram result;
  CompileSession session(context, options, result);
  // Fused chains are split to the storage buffers the device can bind.
  auto module = session.formKernels(program, options.vulkan.maxStorageBuffers);
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
      if (std::string invalid = validateSpirv(words); !invalid.empty())
        return makeError(ErrorKind::Compile, "spirv-val rejected kernel module " +
                                                 name + ":\n" + invalid);
      StringRef kernelModule = StringRef(name).drop_front(strlen("__spv__"));
      binaries[kernelModule] = std::string(
          reinterpret_cast<const char *>(words.data()), words.size() * 4);
    }
  }
  if (auto ok = attachGpuPlan(session, *module, binaries, ".spv", result); !ok)
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
  return result;
}

} // namespace kiln
