//===- KilnDialect.td - the kiln dialect -------------------*- tablegen -*-===//
#ifndef KILN_DIALECT_TD
#define KILN_DIALECT_TD

include "mlir/IR/OpBase.td"

def Kiln_Dialect : Dialect {
  let name = "kiln";
  let summary = "Tensor programs handed to the kiln kernel engine";
  let description = [{
    Ops on builtin ranked tensors with NumPy/PyTorch semantics. Programs are
    `func.func`s of kiln ops; lowering forms fused kernels from them.
  }];
  let cppNamespace = "::kiln";
  let hasConstantMaterializer = 0;
  // Attributes live in the op's dictionary, where KilnOpChecks sees every
  // one: a properties struct would drop unknown entries of a generic
  // `<{...}>` silently.
  let usePropertiesForAttributes = 0;
}

// Rules every kiln op shares (KilnOps.h): only the attributes the op defines,
// and no tensor whose size overflows int64.
def Kiln_OpChecksTrait : NativeOpTrait<"KilnOpChecks"> {
  let cppNamespace = "::kiln::OpTrait";
}

class Kiln_Op<string mnemonic, list<Trait> traits = []>
    : Op<Kiln_Dialect, mnemonic, [Kiln_OpChecksTrait] # traits>;

#endif // KILN_DIALECT_TD
