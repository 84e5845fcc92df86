//===- Passes.td - passes on kiln programs -----------------*- tablegen -*-===//
#ifndef KILN_DIALECT_PASSES_TD
#define KILN_DIALECT_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnVerifyProgram : Pass<"kiln-verify-program", "mlir::ModuleOp"> {
  let summary = "Reject what is not a kiln program, naming the culprit";
  let description = [{
    The front door of the compiler. A kiln program is a module of
    `func.func`s with bodies whose ops are kiln ops, `arith.constant`s of
    ranked tensors, `func.call` and `func.return`, whose values are ranked
    tensors of a size that fits in int64, and whose calls do not recurse
    (directly or through other functions). Anything else would reach
    lowering, which assumes all of this, and crash it or fail there with an
    internal message.
  }];
}

#endif // KILN_DIALECT_PASSES_TD
