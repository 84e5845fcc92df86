//===- GpuCompile.cpp - what both GPU targets' compile drivers share -----===//
#include "CompilerInternals.h"
#include "kiln/Lowering/GPU/GpuPlanExtraction.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;

namespace kiln {

Expected<void> attachGpuPlan(CompileSession &session, ModuleOp module,
                             const llvm::StringMap<std::string> &binaries,
                             unsigned indexBytes, CompiledGpuProgram &result) {
  auto entry = module.lookupSymbol<func::FuncOp>(session.options.entry);
  FailureOr<GpuPlan> plan =
      extractGpuPlan(entry, result.inputs.size(), binaries, indexBytes);
  if (failed(plan))
    return session.fail("the host side of the GPU program");
  result.plan = std::move(*plan);
  return {};
}

} // namespace kiln
