//===- VerifyProgram.cpp - the kiln-verify-program pass ------------------===//
//
// What makes a module a kiln program, beyond what each op verifies: which
// ops may appear, which types values have, and a call graph without cycles.
//
//===----------------------------------------------------------------------===//
#include "kiln/Dialect/KilnOps.h"
#include "kiln/Dialect/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/STLExtras.h"

namespace kiln {
#define GEN_PASS_DEF_KILNVERIFYPROGRAM
#include "kiln/Dialect/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

LogicalResult verifySignature(func::FuncOp func) {
  auto check = [&](TypeRange types, StringRef what) -> LogicalResult {
    for (auto [i, type] : llvm::enumerate(types)) {
      std::string name = what.str() + " #" + std::to_string(i) + " of @" +
                         func.getSymName().str();
      if (!isa<RankedTensorType>(type))
        return func.emitError() << name << " has type " << type
                                << ": kiln values are ranked tensors";
      if (failed(verifyTensorSize([&] { return func.emitError(); }, type, name)))
        return failure();
    }
    return success();
  };
  if (func.isExternal())
    return func.emitError() << "function @" << func.getSymName()
                            << " has no body: a kiln program defines every "
                               "function it calls";
  return success(succeeded(check(func.getArgumentTypes(), "argument")) &&
                 succeeded(check(func.getResultTypes(), "result")));
}

/// Kiln ops, tensor constants, calls and returns; the first op that is none
/// of these is reported (its regions are not looked into).
LogicalResult verifyBody(func::FuncOp func) {
  bool ok = true;
  func.getBody().walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (op->hasAttr(kSizeSourcesAttrName)) {
      op->emitOpError() << "has attribute '" << kSizeSourcesAttrName
                        << "', which only the compiler sets";
      ok = false;
      return WalkResult::advance();
    }
    if (isa_and_nonnull<KilnDialect>(op->getDialect()) ||
        isa<func::CallOp, func::ReturnOp>(op))
      return WalkResult::advance();
    if (auto constant = dyn_cast<arith::ConstantOp>(op);
        constant && isa<RankedTensorType>(constant.getType())) {
      ok &= succeeded(verifyTensorSize([&] { return op->emitOpError(); },
                                       constant.getType(), "result"));
      return WalkResult::advance();
    }
    op->emitError() << "'" << op->getName()
                    << "' is not allowed in a kiln program: function bodies "
                       "hold kiln ops, arith.constant on tensors, func.call "
                       "and func.return";
    ok = false;
    return WalkResult::skip();
  });
  return success(ok);
}

/// Depth-first search of the call graph: a call to a function that is still
/// on the search path closes a cycle.
class RecursionCheck {
public:
  explicit RecursionCheck(ModuleOp module) : symbols(module) {}

  LogicalResult visit(func::FuncOp func) {
    if (done.contains(func))
      return success();
    path.push_back(func);
    WalkResult result = func.walk([&](func::CallOp call) {
      auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
      if (!callee)
        return WalkResult::advance(); // func.call's verifier reports it
      if (auto it = llvm::find(path, callee); it != path.end()) {
        std::string cycle;
        for (func::FuncOp f : llvm::make_range(it, path.end()))
          cycle += "@" + f.getSymName().str() + " -> ";
        call.emitError() << "recursive call: " << cycle << "@"
                         << callee.getSymName()
                         << " (kiln programs cannot recurse)";
        return WalkResult::interrupt();
      }
      return failed(visit(callee)) ? WalkResult::interrupt()
                                   : WalkResult::advance();
    });
    path.pop_back();
    done.insert(func);
    return failure(result.wasInterrupted());
  }

private:
  SymbolTable symbols;
  SmallVector<func::FuncOp> path;
  DenseSet<Operation *> done;
};

struct VerifyProgram : kiln::impl::KilnVerifyProgramBase<VerifyProgram> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    bool ok = true;
    for (Operation &op : *module.getBody()) {
      auto func = dyn_cast<func::FuncOp>(op);
      if (!func) {
        op.emitError() << "'" << op.getName()
                       << "' is not allowed at the top level of a kiln "
                          "program, which holds func.func ops only";
        ok = false;
        continue;
      }
      ok &= succeeded(verifySignature(func)) && succeeded(verifyBody(func));
    }
    // Calls are followed only through well-formed functions.
    RecursionCheck recursion(module);
    if (ok)
      for (auto func : module.getOps<func::FuncOp>())
        if (failed(recursion.visit(func))) {
          ok = false;
          break;
        }
    if (!ok)
      signalPassFailure();
  }
};

} // namespace
