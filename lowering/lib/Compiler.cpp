//===- Compiler.cpp - kiln programs -> CPU object code or PTX ------------===//
#include "kiln/Lowering/Compiler.h"
#include "kiln/Lowering/GPU/GpuPlanExtraction.h"
#include "kiln/Dialect/KilnOps.h"
#include "kiln/Dialect/Passes.h"
#include "kiln/Lowering/Common/Passes.h"

#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Target/SPIRV/Serialization.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm-c/Target.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

#include <spirv-tools/libspirv.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>

using namespace mlir;

namespace kiln {

namespace {
using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

std::optional<DType> dtypeOf(Type t) {
  if (t.isF64()) return DType::F64;
  if (t.isF32()) return DType::F32;
  if (t.isF16()) return DType::F16;
  if (t.isBF16()) return DType::BF16;
  auto i = dyn_cast<IntegerType>(t);
  if (!i)
    return std::nullopt;
  if (i.getWidth() == 1 && i.isSignless())
    return DType::Bool;
  bool u = i.isUnsigned();
  if (!u && !i.isSignless())
    return std::nullopt;
  switch (i.getWidth()) {
  case 8: return u ? DType::U8 : DType::I8;
  case 16: return u ? DType::U16 : DType::I16;
  case 32: return u ? DType::U32 : DType::I32;
  case 64: return u ? DType::U64 : DType::I64;
  default: return std::nullopt;
  }
}

Expected<std::vector<TensorSignature>> signatureOf(TypeRange types,
                                                   StringRef what) {
  std::vector<TensorSignature> out;
  for (auto [i, t] : llvm::enumerate(types)) {
    auto tensor = dyn_cast<RankedTensorType>(t);
    std::optional<DType> dtype =
        tensor ? dtypeOf(tensor.getElementType()) : std::nullopt;
    if (!tensor || !tensor.hasStaticShape() || !dtype) {
      std::string s;
      llvm::raw_string_ostream os(s);
      os << what << " #" << i << " has type " << t
         << "; kiln programs take and return statically shaped tensors of "
            "kiln element types";
      return makeError(ErrorKind::Unsupported, s);
    }
    out.push_back({*dtype, std::vector<int64_t>(tensor.getShape().begin(),
                                                tensor.getShape().end())});
  }
  return out;
}

void writeFile(const std::string &dir, const std::string &name,
               std::string_view text) {
  std::filesystem::create_directories(dir);
  std::ofstream(std::filesystem::path(dir) / name, std::ios::binary)
      << text;
}

/// libdevice for f64 math in kernels, where the CUDA toolkit has it.
std::string libdevicePath() {
  const char *root = std::getenv("CUDA_HOME");
  std::string path = std::string(root ? root : "/usr/local/cuda") +
                     "/nvvm/libdevice/libdevice.10.bc";
  return std::filesystem::exists(path) ? path : "";
}

/// `ptx` assembled by ptxas for `chip`; a failure carries ptxas's output
/// and the command line that reproduces it.
Expected<std::string> assembleCubin(const std::string &ptxas, const std::string &chip,
                                    const std::string &ptx) {
  auto program = llvm::sys::findProgramByName(ptxas);
  if (!program)
    return makeError(ErrorKind::InvalidArgument, "ptxas '" + ptxas + "' not found");
  llvm::SmallString<64> in, out, log;
  for (auto [path, suffix] : {std::pair{&in, "ptx"}, {&out, "cubin"}, {&log, "log"}})
    if (llvm::sys::fs::createTemporaryFile("kiln", suffix, *path))
      return makeError(ErrorKind::Compile, "ptxas: cannot create a temporary file");
  bool failed = false; // then the input stays, for the repro line
  auto cleanup = llvm::make_scope_exit([&] {
    for (auto *path : {&in, &out, &log})
      if (!failed || path != &in)
        llvm::sys::fs::remove(*path);
  });
  std::ofstream(in.str().str(), std::ios::binary) << ptx;
  llvm::SmallVector<llvm::StringRef> args = {*program, "--gpu-name", chip, "-O3",
                                            "-o", out, in};
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, log.str(), log.str()};
  int rc = llvm::sys::ExecuteAndWait(*program, args, std::nullopt, redirects);
  auto slurp = [](llvm::StringRef path) {
    std::ifstream f(path.str(), std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  failed = rc != 0;
  if (failed)
    return makeError(ErrorKind::Compile,
                     "ptxas failed (exit " + std::to_string(rc) + "):\n" +
                         slurp(log) + "repro: " + llvm::join(args, " "));
  return slurp(out);
}

std::string print(Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  op->print(os);
  return s;
}
/// Parses a program from text that need not end in NUL: MLIR's lexer reads
/// one past the end of its buffer (ASan, fuzz-program), so it gets a copy
/// that does.
OwningOpRef<ModuleOp> parseProgram(std::string_view source, const ParserConfig &config) {
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(source.data(), source.size()),
                                           "program"),
      llvm::SMLoc());
  return parseSourceFile<ModuleOp>(sourceMgr, config);
}
} // namespace

struct Compiler::Impl {
  MLIRContext context;
  std::unique_ptr<llvm::TargetMachine> targetMachine;
  std::string features;
  std::string fingerprint; // of the CPU target
  int64_t f32Lanes = 4; // of the widest vector registers the host has

  Impl() : context(makeRegistry(), MLIRContext::Threading::DISABLED) {
    context.loadAllAvailableDialects();
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
    std::string triple = llvm::sys::getProcessTriple();
    std::string error;
    llvm::Triple t(triple);
    const llvm::Target *target = llvm::TargetRegistry::lookupTarget(t, error);
    llvm::SubtargetFeatures subtarget;
    for (auto &[name, enabled] : llvm::sys::getHostCPUFeatures())
      subtarget.AddFeature(name, enabled);
    features = subtarget.getString();
    auto has = [&](llvm::StringRef f) {
      return llvm::is_contained(subtarget.getFeatures(), ("+" + f).str());
    };
    f32Lanes = has("avx512f") ? 16 : has("avx") ? 8 : 4;
    // Computed once: getHostCPUName reads /proc/cpuinfo, far too slow for
    // every kernel-cache lookup.
    fingerprint = "cpu-" + triple + "-" + llvm::sys::getHostCPUName().str() + "+" +
                  std::to_string(std::hash<std::string>{}(features));
    if (target) {
      llvm::TargetOptions options;
      targetMachine.reset(target->createTargetMachine(
          t, llvm::sys::getHostCPUName(), features, options, llvm::Reloc::PIC_,
          std::nullopt, llvm::CodeGenOptLevel::Aggressive));
    }
  }

  static DialectRegistry makeRegistry() {
    DialectRegistry registry;
    registerAllDialects(registry);
    registerAllExtensions(registry);
    registerAllToLLVMIRTranslations(registry);
    registerKilnDialect(registry);
    return registry;
  }
};

Compiler::Compiler() : impl(std::make_unique<Impl>()) {}
Compiler::~Compiler() = default;

std::string Compiler::targetFingerprint() const { return impl->fingerprint; }

Expected<std::string> Compiler::canonicalForm(std::string_view source) {
  MLIRContext &ctx = impl->context;
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
    llvm::raw_string_ostream(diagnostics) << diag << "\n";
    return success();
  });
  ParserConfig config(&ctx);
  OwningOpRef<ModuleOp> module = parseProgram(source, config);
  if (!module)
    return makeError(ErrorKind::InvalidArgument, diagnostics);
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os, OpPrintingFlags().printGenericOpForm());
  return text;
}

namespace {
/// Collects error diagnostics as "program:line:col: error: ..." lines.
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(MLIRContext &ctx)
      : handler(&ctx, [this](Diagnostic &diag) {
          if (diag.getSeverity() != DiagnosticSeverity::Error)
            return success();
          llvm::raw_string_ostream os(text);
          if (!text.empty())
            os << "\n";
          if (auto file = diag.getLocation()->findInstanceOf<FileLineColLoc>())
            os << file.getFilename().getValue() << ":" << file.getLine() << ":"
               << file.getColumn();
          else
            os << diag.getLocation();
          os << ": error: " << diag;
          for (Diagnostic &note : diag.getNotes())
            os << "\n  note: " << note;
          return success();
        }) {}

  /// An error for a failed stage: Unsupported when a rule says so.
  std::unexpected<Error> fail(const std::string &what) const {
    ErrorKind kind = text.find("not supported") != std::string::npos
                         ? ErrorKind::Unsupported
                         : ErrorKind::Compile;
    return makeError(kind, what + ":\n" + text);
  }

  std::string text;

private:
  ScopedDiagnosticHandler handler;
};

/// Times a stage into `result` when it goes out of scope.
struct StageTimer {
  CompiledProgram &result;
  const char *stage;
  Clock::time_point start = Clock::now();
  ~StageTimer() { result.stageTimes.push_back({stage, msSince(start)}); }
};
} // namespace

/// Parse, verify, read the signature, form kernels: the part every target
/// shares.
static Expected<OwningOpRef<ModuleOp>>
formKernels(MLIRContext &ctx, std::string_view source,
            const CompileOptions &options, CompiledProgram &result,
            DiagnosticCollector &diagnostics, unsigned maxKernelBuffers = 0) {
  OwningOpRef<ModuleOp> module;
  {
    StageTimer timer{result, "parse"};
    ParserConfig config(&ctx);
    module = parseProgram(source, config);
  }
  if (!module)
    return makeError(ErrorKind::InvalidArgument, diagnostics.text);
  {
    // What is not a kiln program is the user's mistake, not a compile error.
    PassManager pm(&ctx);
    pm.addPass(createKilnVerifyProgram());
    if (failed(pm.run(*module)))
      return makeError(ErrorKind::InvalidArgument, diagnostics.text);
  }
  auto entry = module->lookupSymbol<func::FuncOp>(options.entry);
  if (!entry || entry.isExternal())
    return makeError(ErrorKind::InvalidArgument,
                     "program has no entry function '@" + options.entry + "'");
  auto inputs = signatureOf(entry.getArgumentTypes(), "argument");
  if (!inputs)
    return std::unexpected(inputs.error());
  auto outputs = signatureOf(entry.getResultTypes(), "result");
  if (!outputs)
    return std::unexpected(outputs.error());
  result.inputs = std::move(*inputs);
  result.outputs = std::move(*outputs);
  if (!options.dumpDir.empty())
    writeFile(options.dumpDir, "0-kiln.mlir", print(*module));
  {
    StageTimer timer{result, "kernels"};
    PassManager pm(&ctx);
    buildKilnToKernelsPipeline(pm, maxKernelBuffers);
    if (failed(pm.run(*module)))
      return diagnostics.fail("kernel formation failed");
  }
  module->walk([&](func::FuncOp f) {
    if (f->hasAttr("kiln.kernel"))
      ++result.kernelCount;
  });
  if (!options.dumpDir.empty())
    writeFile(options.dumpDir, "1-kernels.mlir", print(*module));
  return module;
}

Expected<CompiledCpuProgram>
Compiler::compileForCpu(std::string_view source, const CompileOptions &options) {
  MLIRContext &ctx = impl->context;
  if (!impl->targetMachine)
    return makeError(ErrorKind::Unsupported, "cpu: no code generator for " +
                                                 llvm::sys::getProcessTriple());
  DiagnosticCollector diagnostics(ctx);
  CompiledCpuProgram result;
  auto module = formKernels(ctx, source, options, result, diagnostics);
  if (!module)
    return std::unexpected(module.error());
  {
    StageTimer timer{result, "llvm-dialect"};
    PassManager lower(&ctx);
    CpuPipelineOptions pipeline;
    pipeline.entry = options.entry;
    pipeline.numThreads = options.numThreads;
    pipeline.vectorWidth = impl->f32Lanes;
    buildKernelsToCpuLLVMPipeline(lower, pipeline);
    if (failed(lower.run(**module)))
      return diagnostics.fail("lowering to the LLVM dialect failed");
  }
  if (!options.dumpDir.empty())
    writeFile(options.dumpDir, "2-llvm.mlir", print(**module));

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule;
  llvm::TargetMachine &tm = *impl->targetMachine;
  {
    StageTimer timer{result, "llvm-ir"};
    llvmModule = translateModuleToLLVMIR(**module, llvmContext, "kiln");
    if (!llvmModule)
      return diagnostics.fail("translation to LLVM IR failed");
    llvmModule->setDataLayout(tm.createDataLayout());
    llvmModule->setTargetTriple(tm.getTargetTriple());
    for (llvm::Function &f : *llvmModule) {
      if (f.isDeclaration())
        continue;
      f.addFnAttr("target-cpu", tm.getTargetCPU());
      f.addFnAttr("target-features", tm.getTargetFeatureString());
    }
  }
  {
    StageTimer timer{result, "llvm-opt"};
    if (auto err = makeOptimizingTransformer(3, 0, &tm)(llvmModule.get()))
      return makeError(ErrorKind::Compile, "LLVM optimisation failed: " +
                                               llvm::toString(std::move(err)));
  }
  if (!options.dumpDir.empty()) {
    std::string ir;
    llvm::raw_string_ostream os(ir);
    llvmModule->print(os, nullptr);
    writeFile(options.dumpDir, "3-llvm.ll", ir);
  }
  {
    StageTimer timer{result, "codegen"};
    llvm::SmallVector<char, 0> object;
    llvm::raw_svector_ostream os(object);
    llvm::legacy::PassManager codegen;
    if (tm.addPassesToEmitFile(codegen, os, nullptr,
                               llvm::CodeGenFileType::ObjectFile))
      return makeError(ErrorKind::Compile, "cpu: cannot emit object code");
    codegen.run(*llvmModule);
    result.object.assign(object.begin(), object.end());
  }
  if (!options.dumpDir.empty())
    writeFile(options.dumpDir, "4-kernel.o", result.object);
  return result;
}

/// Reads the launch plan off the lowered host function, with `binaries`
/// (kernel module name -> PTX, cubin or SPIR-V) as its modules, and dumps
/// them as 3-kernelN`extension`.
static Expected<void> attachPlan(ModuleOp module, const CompileOptions &options,
                                 const llvm::StringMap<std::string> &binaries,
                                 StringRef extension,
                                 const DiagnosticCollector &diagnostics,
                                 CompiledGpuProgram &result) {
  auto entry = module.lookupSymbol<func::FuncOp>(options.entry);
  FailureOr<GpuPlan> plan = extractGpuPlan(entry, result.inputs.size(), binaries);
  if (failed(plan))
    return diagnostics.fail("the host side of the GPU program");
  result.plan = std::move(*plan);
  if (!options.dumpDir.empty())
    for (auto [i, image] : llvm::enumerate(result.plan.modules))
      writeFile(options.dumpDir, "3-kernel" + std::to_string(i) + extension.str(), image);
  return {};
}

Expected<CompiledGpuProgram>
Compiler::compileForCuda(std::string_view source, const CompileOptions &options) {
  MLIRContext &ctx = impl->context;
  DiagnosticCollector diagnostics(ctx);
  CompiledGpuProgram result;
  auto module = formKernels(ctx, source, options, result, diagnostics);
  if (!module)
    return std::unexpected(module.error());
  {
    StageTimer timer{result, "ptx"};
    PassManager lower(&ctx);
    GpuPipelineOptions pipeline;
    pipeline.chip = options.chip;
    pipeline.libdevice = libdevicePath();
    pipeline.mmaTileN = options.mmaTileN;
    pipeline.mmaStages = options.mmaStages;
    pipeline.mmaStepBytes = options.mmaStepBytes;
    pipeline.tf32 = options.tf32;
    buildKernelsToNvvmPipeline(lower, pipeline);
    if (failed(lower.run(**module)))
      return diagnostics.fail("lowering to PTX failed");
  }
  if (!options.dumpDir.empty())
    writeFile(options.dumpDir, "2-gpu.mlir", print(**module));
  llvm::StringMap<std::string> ptx;
  for (auto binary : (*module)->getOps<gpu::BinaryOp>())
    ptx[binary.getSymName()] =
        cast<gpu::ObjectAttr>(binary.getObjects()[0]).getObject().str();
  if (!options.ptxas.empty()) {
    StageTimer timer{result, "ptxas"};
    for (auto &entry : ptx) {
      auto cubin = assembleCubin(options.ptxas, options.chip, entry.second);
      if (!cubin)
        return std::unexpected(cubin.error());
      entry.second = std::move(*cubin);
    }
  }
  if (auto ok = attachPlan(**module, options, ptx, options.ptxas.empty() ? ".ptx" : ".cubin",
                          diagnostics, result);
      !ok)
    return std::unexpected(ok.error());
  return result;
}

VulkanTarget VulkanTarget::of(const VulkanDeviceProperties &device) {
  return {device.float16,
          device.float64,
          device.int8,
          device.int16,
          device.int64,
          device.storage8,
          device.storage16,
          {device.maxWorkgroupCount[0], device.maxWorkgroupCount[1],
           device.maxWorkgroupCount[2]},
          device.preserveNan16,
          device.preserveNan32,
          device.preserveNan64,
          std::min(device.maxStorageBuffersPerStage, device.maxStorageBuffersPerSet)};
}

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

Expected<CompiledGpuProgram>
Compiler::compileForVulkan(std::string_view source, const CompileOptions &options) {
  MLIRContext &ctx = impl->context;
  DiagnosticCollector diagnostics(ctx);
  CompiledGpuProgram result;
  // Fused chains are split to the storage buffers the device can bind.
  auto module = formKernels(ctx, source, options, result, diagnostics,
                            options.vulkan.maxStorageBuffers);
  if (!module)
    return std::unexpected(module.error());
  std::optional<std::string> missing;
  (*module)->walk([&](Operation *op) {
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
  {
    StageTimer timer{result, "spirv"};
    PassManager lower(&ctx);
    buildKernelsToSpirvPipeline(lower, spirvEnvironment(options.vulkan));
    if (failed(lower.run(**module)))
      return diagnostics.fail("lowering to SPIR-V failed");
  }
  if (!options.dumpDir.empty())
    writeFile(options.dumpDir, "2-spirv.mlir", print(**module));
  llvm::StringMap<std::string> binaries;
  {
    StageTimer timer{result, "serialize"};
    for (auto spv : (*module)->getOps<spirv::ModuleOp>()) {
      SmallVector<uint32_t> words;
      if (failed(spirv::serialize(spv, words)))
        return diagnostics.fail("SPIR-V serialisation failed");
      std::string name = spv.getName()->str();
      if (std::string invalid = validateSpirv(words); !invalid.empty())
        return makeError(ErrorKind::Compile, "spirv-val rejected kernel module " +
                                                 name + ":\n" + invalid);
      StringRef kernelModule = StringRef(name).drop_front(strlen("__spv__"));
      binaries[kernelModule] = std::string(
          reinterpret_cast<const char *>(words.data()), words.size() * 4);
    }
  }
  if (auto ok = attachPlan(**module, options, binaries, ".spv", diagnostics, result); !ok)
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
