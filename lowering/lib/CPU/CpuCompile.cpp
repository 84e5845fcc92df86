//===- CpuCompile.cpp - the CPU target's compile driver ------------------===//
//
// Fused kernels -> LLVM dialect -> LLVM IR optimised for the host CPU ->
// a relocatable object with `_kiln_entry`.
//
//===----------------------------------------------------------------------===//
#include "CompilerInternals.h"
#include "kiln/Lowering/CPU/Passes.h"
#include "kiln/runtime/cpu/CpuFeatures.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/AsmParser/Parser.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/xxhash.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

#include <thread>

using namespace mlir;

namespace kiln {

namespace {
/// The host's features, then KILN_CPU_FEATURES's items over them, read
/// once. It narrows only, within what every CPU of the triple has: an item
/// is left out, warned about, where it adds a feature the host lacks (its
/// kernels would stop at an illegal instruction) or takes away one of the
/// generic CPU's (-sse2, -64bit-mode: LLVM cannot generate code without
/// them and aborts the process).
const std::string &hostFeaturesWithOverrides(const llvm::Target &target, const llvm::Triple &t) {
  static const std::string features = [&] {
    llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures();
    std::unique_ptr<llvm::MCSubtargetInfo> generic(
        target.createMCSubtargetInfo(t, "generic", ""));
    llvm::SubtargetFeatures subtarget;
    for (auto &[name, enabled] : host)
      subtarget.AddFeature(name, enabled);
    for (llvm::StringRef item : llvm::split(cpuFeatureOverrides(), ',')) {
      if (item.empty())
        continue;
      std::string feature = item.drop_front().str();
      const char *why = nullptr;
      if (item.front() == '+' && !host.lookup(feature))
        why = "this CPU does not have it (its kernels would stop at an illegal instruction)";
      else if (item.front() == '-' && (!generic || generic->checkFeatures("+" + feature)))
        why = "every CPU of this kind has it (code cannot be generated without it)";
      if (why) {
        std::fprintf(stderr, "kiln: KILN_CPU_FEATURES: '%s' left out: %s\n", item.str().c_str(),
                     why);
        continue;
      }
      subtarget.AddFeature(item);
    }
    return subtarget.getString();
  }();
  return features;
}
} // namespace

HostCpu HostCpu::detect() {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  HostCpu host;
  std::string triple = llvm::sys::getProcessTriple();
  std::string error;
  llvm::Triple t(triple);
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(t, error);
  if (target) {
    llvm::TargetOptions options;
    host.targetMachine.reset(target->createTargetMachine(
        t, llvm::sys::getHostCPUName(), hostFeaturesWithOverrides(*target, t), options,
        llvm::Reloc::PIC_, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  }
  // What code generation will use: later features win, and turning one
  // off turns off those that imply it (-avx512f: no avx512bf16 either).
  auto has = [&](llvm::StringRef f) {
    return host.targetMachine &&
           host.targetMachine->getMCSubtargetInfo()->checkFeatures(("+" + f).str());
  };
  host.f32Lanes = has("avx512f") ? 16 : has("avx") ? 8 : 4;
  // bf16 attention in pairs (vdpbf16ps), measured: 1.4x on a 2-core Zen 5
  // (causal 1x16x1024x64: 9.7 -> 6.9 ms), but on the H200 host's 16-core
  // Xeon slower than f32 (causal 5.2-5.9 against f32's 3.9 ms; widened to
  // f32, bf16 causal ran within 30% of f32 on the H100 host's Xeon in
  // session 45). Intel's AMX is the road there.
  host.bf16DotProducts = host.f32Lanes == 16 && has("avx512bf16") &&
                         llvm::sys::getHostCPUName().starts_with("znver");
  return host;
}

namespace {
/// The hand-edited LLVM IR `override`, verified (code generation trusts
/// its input); an error names the file and line.
Expected<std::unique_ptr<llvm::Module>> parseLlvmOverride(const CompileDumps::Override &override,
                                                          llvm::LLVMContext &context) {
  llvm::SMDiagnostic diagnostic;
  std::unique_ptr<llvm::Module> module =
      llvm::parseAssemblyString(override.text, diagnostic, context);
  if (!module)
    return makeError(ErrorKind::InvalidArgument,
                     "override " + override.path + ":" + std::to_string(diagnostic.getLineNo()) +
                         ":" + std::to_string(diagnostic.getColumnNo() + 1) +
                         ": error: " + diagnostic.getMessage().str());
  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(*module, &os))
    return makeError(ErrorKind::InvalidArgument,
                     "override " + override.path + " is not valid LLVM IR:\n" + problems);
  return module;
}
} // namespace

Expected<CompiledCpuProgram> MlirCompiler::compileForCpu(ParsedProgram program,
                                                     const CompileOptions &options) {
  const HostCpu &cpu = host();
  if (!cpu.targetMachine)
    return makeError(ErrorKind::Unsupported, "cpu: no code generator for " +
                                                 llvm::sys::getProcessTriple());
  CompiledCpuProgram result;
  llvm::TargetMachine &tm = *cpu.targetMachine;
  CompileSession session(
      context, options, result, program, "cpu",
      tm.getTargetTriple().str() + " " + tm.getTargetCPU().str() + " features-" +
          llvm::utohexstr(llvm::xxh3_64bits(tm.getTargetFeatureString())) + " threads" +
          std::to_string(std::thread::hardware_concurrency()));
  auto module = session.formKernels();
  if (!module)
    return std::unexpected(module.error());
  CpuPipelineOptions pipeline;
  pipeline.entry = options.entry;
  pipeline.numThreads = options.numThreads;
  pipeline.vectorWidth = cpu.f32Lanes;
  pipeline.bf16DotProducts = cpu.bf16DotProducts;
  if (auto ok = session.lower(
          *module, "llvm-dialect",
          [&](OpPassManager &pm) { buildKernelsToCpuLLVMPipeline(pm, pipeline); },
          "lowering to the LLVM dialect failed", "2-llvm.mlir");
      !ok)
    return std::unexpected(ok.error());

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule;
  {
    auto timer = session.time("llvm-ir");
    llvmModule = translateModuleToLLVMIR(*module, llvmContext, "kiln");
    if (!llvmModule)
      return session.fail("translation to LLVM IR failed");
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
    auto timer = session.time("llvm-opt");
    if (auto err = makeOptimizingTransformer(3, 0, &tm)(llvmModule.get()))
      return makeError(ErrorKind::Compile, "LLVM optimisation failed: " +
                                               llvm::toString(std::move(err)));
  }
  session.dumps.stage("3-llvm.ll", [&] {
    std::string ir;
    llvm::raw_string_ostream os(ir);
    // With the use-list order, which codegen can depend on: an override
    // of the unchanged text then gives the same object.
    llvmModule->print(os, nullptr, /*ShouldPreserveUseListOrder=*/true);
    return ir;
  });
  if (auto override = session.dumps.take("3-llvm.ll")) {
    auto edited = parseLlvmOverride(*override, llvmContext);
    if (!edited)
      return std::unexpected(edited.error());
    llvmModule = std::move(*edited);
    llvmModule->setDataLayout(tm.createDataLayout());
    llvmModule->setTargetTriple(tm.getTargetTriple());
  }
  {
    auto timer = session.time("codegen");
    llvm::SmallVector<char, 0> object;
    llvm::raw_svector_ostream os(object);
    llvm::legacy::PassManager codegen;
    if (tm.addPassesToEmitFile(codegen, os, nullptr,
                               llvm::CodeGenFileType::ObjectFile))
      return makeError(ErrorKind::Compile, "cpu: cannot emit object code");
    codegen.run(*llvmModule);
    result.object.assign(object.begin(), object.end());
  }
  session.stageBinary("4-kernel.o", result.object);
  return session.finish(result);
}

} // namespace kiln
