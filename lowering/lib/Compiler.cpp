//===- Compiler.cpp - what every target's compile shares ----------------===//
//
// The MLIR context, parsing, the compile prologue (verification, the entry
// signature, kernel formation), diagnostics, stage times and dumps. Each
// target's driver is in its folder: CPU/CpuCompile.cpp, CUDA/CudaCompile.cpp,
// SPIRV/SpirvCompile.cpp.
//
//===----------------------------------------------------------------------===//
#include "CompilerInternals.h"
#include "kiln/Dialect/KilnOps.h"
#include "kiln/Dialect/Passes.h"
#include "kiln/Lowering/Common/Passes.h"
#include "kiln/Lowering/Kernels/KernelOps.h"
#include "kiln/Lowering/KilnToLinalg/DynamicShapes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"


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
  if (isa<Float8E4M3FNType>(t)) return DType::F8E4M3FN;
  if (isa<Float8E5M2Type>(t)) return DType::F8E5M2;
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
    if (!tensor || !dtype) {
      std::string s;
      llvm::raw_string_ostream os(s);
      os << what << " #" << i << " has type " << t
         << "; kiln programs take and return ranked tensors of kiln element "
            "types";
      return makeError(ErrorKind::Unsupported, s);
    }
    out.push_back({*dtype, std::vector<int64_t>(tensor.getShape().begin(),
                                                tensor.getShape().end())});
  }
  return out;
}

DialectRegistry makeRegistry() {
  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  registerKilnDialect(registry);
  kernel::registerKilnKernelDialect(registry);
  return registry;
}

/// Collects error diagnostics as "program:line:col: error: ..." lines.
ScopedDiagnosticHandler collectErrors(MLIRContext &ctx, std::string &text) {
  return ScopedDiagnosticHandler(&ctx, [&text](Diagnostic &diag) {
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
  });
}
} // namespace

MlirCompiler::MlirCompiler() : context(makeRegistry(), MLIRContext::Threading::DISABLED) {
  context.loadAllAvailableDialects();
}

std::unique_ptr<Compiler> createCompiler() { return std::make_unique<MlirCompiler>(); }

Expected<ParsedProgram> MlirCompiler::parse(std::string_view source) {
  MLIRContext &ctx = context;
  ++parses;
  std::string diagnostics;
  auto handler = collectErrors(ctx, diagnostics);
  auto start = Clock::now();
  // MLIR's lexer reads one past the end of its buffer (ASan, fuzz-program),
  // so it gets a NUL-terminated copy of text that need not end in one.
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(source.data(), source.size()),
                                           "program"),
      llvm::SMLoc());
  ParserConfig config(&ctx);
  auto module = std::make_unique<MlirModule>();
  module->op = parseSourceFile<ModuleOp>(sourceMgr, config);
  double ms = msSince(start);
  if (!module->op)
    return makeError(ErrorKind::InvalidArgument, diagnostics);
  {
    // What is not a kiln program is the user's mistake, not a compile error.
    PassManager pm(&ctx);
    pm.addPass(createKilnVerifyProgram());
    if (failed(pm.run(*module->op)))
      return makeError(ErrorKind::InvalidArgument, diagnostics);
  }
  std::string canonical;
  llvm::raw_string_ostream os(canonical);
  module->op->print(os, OpPrintingFlags().printGenericOpForm());
  return ParsedProgram(std::move(module), std::move(canonical), ms);
}

CompileSession::CompileSession(MLIRContext &context, const CompileOptions &options,
                               CompiledProgram &result, ParsedProgram &program,
                               std::string target, std::string detail)
    : options(options), result(result),
      dumps(options, std::move(target), std::move(detail), program.canonicalText()),
      context(context), program(program), handler(collectErrors(context, diagnostics)) {}

CompileSession::~CompileSession() {
  if (!finished)
    dumps.finish(false, result, nullptr, kernels);
}

CompileSession::Timer::~Timer() { result.stageTimes.push_back({stage, msSince(start)}); }

std::unexpected<Error> CompileSession::fail(const std::string &what) const {
  ErrorKind kind = diagnostics.find("not supported") != std::string::npos
                       ? ErrorKind::Unsupported
                       : ErrorKind::Compile;
  return makeError(kind, what + ":\n" + diagnostics);
}

namespace {
/// The hand-edited module `override`; a parse error names its file and line.
Expected<OwningOpRef<ModuleOp>> parseOverride(MLIRContext &ctx,
                                              const CompileDumps::Override &override) {
  std::string diagnostics;
  auto handler = collectErrors(ctx, diagnostics);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(override.text, override.path),
                               llvm::SMLoc());
  ParserConfig config(&ctx);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, config);
  if (!module)
    return makeError(ErrorKind::InvalidArgument,
                     "override " + override.path + " does not parse:\n" + diagnostics);
  return module;
}

bool sameSignature(const std::vector<TensorSignature> &a, const std::vector<TensorSignature> &b) {
  return llvm::equal(a, b, [](const TensorSignature &x, const TensorSignature &y) {
    return x.dtype == y.dtype && x.shape == y.shape;
  });
}
} // namespace

void CompileSession::stageBinary(const std::string &file, std::string &bytes) {
  dumps.stage(file, [&] { return bytes; });
  if (auto override = dumps.take(file))
    bytes = std::move(override->text);
}

Expected<void> CompileSession::stageModule(const std::string &file, ModuleOp &module) {
  dumps.stage(file, [&] {
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os);
    return text;
  });
  auto override = dumps.take(file);
  if (!override)
    return {};
  auto parsed = parseOverride(context, *override);
  if (!parsed)
    return std::unexpected(parsed.error());
  // The program's callers rely on its signature; where the entry still
  // takes tensors, an override must keep it.
  if (auto entry = (*parsed)->lookupSymbol<func::FuncOp>(options.entry)) {
    auto inputs = signatureOf(entry.getArgumentTypes(), "argument");
    auto outputs = signatureOf(entry.getResultTypes(), "result");
    if (inputs && outputs &&
        !(sameSignature(*inputs, declaredInputs) && sameSignature(*outputs, declaredOutputs)))
      return makeError(ErrorKind::InvalidArgument,
                       "override " + override->path + " changes the signature of @" +
                           options.entry + "; an override must keep it");
  }
  module = **parsed;
  replacements.push_back(std::move(*parsed));
  return {};
}

Expected<ModuleOp> CompileSession::formKernels(unsigned maxKernelBuffers, AttentionFusion attention) {
  result.stageTimes.push_back({"parse", program.parseTime()});
  ModuleOp module = *static_cast<MlirModule &>(program.parsed()).op;
  auto entry = module.lookupSymbol<func::FuncOp>(options.entry);
  if (!entry || entry.isExternal())
    return makeError(ErrorKind::InvalidArgument,
                     "program has no entry function '@" + options.entry + "'");
  auto inputs = signatureOf(entry.getArgumentTypes(), "argument");
  if (!inputs)
    return std::unexpected(inputs.error());
  auto outputs = signatureOf(entry.getResultTypes(), "result");
  if (!outputs)
    return std::unexpected(outputs.error());
  declaredInputs = *inputs;
  declaredOutputs = *outputs;
  if (auto named = nameRunTimeSizes(entry, *inputs, *outputs, result.sizeRules); !named)
    return std::unexpected(named.error());
  result.inputs = std::move(*inputs);
  result.outputs = std::move(*outputs);
  if (auto ok = stageModule("0-kiln.mlir", module); !ok)
    return std::unexpected(ok.error());
  if (module != *static_cast<MlirModule &>(program.parsed()).op) {
    // An edited program is held to what the parse holds programs to.
    PassManager pm(&context);
    pm.addPass(createKilnVerifyProgram());
    if (failed(pm.run(module)))
      return makeError(ErrorKind::InvalidArgument,
                       "override of 0-kiln.mlir is not a kiln program:\n" + diagnostics);
  }
  // Before canonicalisation deletes ops that tie a fill's sizes (the
  // program as written, or its override).
  if (auto e = module.lookupSymbol<func::FuncOp>(options.entry); e && !e.isExternal())
    if (auto ok = annotateSizeSources(e); !ok)
      return std::unexpected(ok.error());
  if (auto ok = lower(
          module, "kernels",
          [&](OpPassManager &pm) { buildKilnToKernelsPipeline(pm, maxKernelBuffers, attention); },
          "kernel formation failed", "1-kernels.mlir");
      !ok)
    return std::unexpected(ok.error());
  module.walk([&](func::FuncOp f) {
    if (f->hasAttr("kiln.kernel"))
      kernels.push_back(f.getSymName().str());
  });
  result.kernelCount = kernels.size();
  return module;
}

Expected<void> CompileSession::lower(ModuleOp &module, const char *stage,
                                     const std::function<void(OpPassManager &)> &build,
                                     const std::string &failure,
                                     const std::string &stageFile) {
  {
    auto timer = time(stage);
    PassManager pm(&context);
    build(pm);
    // Tuned configs go in as a module attribute, the tune keys the
    // template passes asked for come out as one (Common/Tuned.h).
    if (!options.tuned.empty()) {
      SmallVector<NamedAttribute> tuned;
      for (const auto &[key, config] : options.tuned)
        tuned.emplace_back(StringAttr::get(&context, key), StringAttr::get(&context, config));
      module->setAttr("kiln.tuned", DictionaryAttr::get(&context, tuned));
    }
    LogicalResult ran = pm.run(module);
    if (auto keys = module->getAttrOfType<ArrayAttr>("kiln.tune_keys"))
      for (auto key : keys.getAsValueRange<StringAttr>())
        if (!llvm::is_contained(result.tuneKeys, key.str()))
          result.tuneKeys.push_back(key.str());
    if (auto untuned = module->getAttrOfType<DictionaryAttr>("kiln.untuned"))
      for (NamedAttribute entry : untuned)
        result.untunedConfigs[entry.getName().str()] =
            cast<StringAttr>(entry.getValue()).str();
    module->removeAttr("kiln.tuned");
    module->removeAttr("kiln.tune_keys");
    module->removeAttr("kiln.untuned");
    if (failed(ran))
      return fail(failure);
  }
  if (stageFile.empty())
    return {};
  return stageModule(stageFile, module);
}

} // namespace kiln
