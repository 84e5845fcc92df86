//===- KernelOps.td - kiln_kernel: ops that are kernels of their own -*- tablegen -*-===//
//
// Computations that no linalg op expresses and that must stay whole until a
// target builds their kernel: the conversion from kiln creates them on
// tensors, form-kernels outlines each as a kernel, bufferization puts them on
// buffers, and a target pass replaces them. Not part of kiln's program
// language (kiln-verify-program admits only the kiln dialect).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LOWERING_KERNELS_KERNELOPS_TD
#define KILN_LOWERING_KERNELS_KERNELOPS_TD

include "mlir/IR/OpBase.td"
include "mlir/Interfaces/DestinationStyleOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.td"

def KilnKernel_Dialect : Dialect {
  let name = "kiln_kernel";
  let summary = "Kernels kiln builds whole, between the conversion and a target";
  let cppNamespace = "::kiln::kernel";
}

def KilnKernel_AttentionOp : Op<KilnKernel_Dialect, "attention", [
    DestinationStyleOpInterface,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    DeclareOpInterfaceMethods<BufferizableOpInterface,
        ["bufferizesToMemoryRead", "bufferizesToMemoryWrite",
         "getAliasingValues", "bufferize"]>]> {
  let summary = "Fused attention: softmax(q k^T * scale + mask) v, no score matrix";
  let description = [{
    q [B, Lq, E], k [B, Lk, E], v [B, Lk, Ev] -> out [B, Lq, Ev] (q's type),
    static shapes. `mask` [1 or B, 1 or Lq, 1 or Lk] broadcasts: added to
    the scores (q's type) or, as i1, keeps the scores where true. `causal`
    keeps key j for query i where j <= i. Scores, softmax and the sum over
    keys are f32 (f64 for f64 q); the unnormalised probabilities are rounded
    to q's type before they multiply v, as flash-attention kernels do. `acc`
    [B, Lq, Ev] of that type is scratch a kernel may keep its running sums
    in. On tensors the op returns out and acc; on buffers it writes them.
  }];
  let arguments = (ins AnyShaped:$q, AnyShaped:$k, AnyShaped:$v,
                   Optional<AnyShaped>:$mask, AnyShaped:$out, AnyShaped:$acc,
                   F64Attr:$scale, UnitAttr:$causal);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    `ins` `(` $q `,` $k `,` $v (`mask` $mask^)? `:` type($q) `,` type($k) `,`
    type($v) (`,` type($mask)^)? `)` `outs` `(` $out `,` $acc `:` type($out)
    `,` type($acc) `)` attr-dict (`->` type($results)^)?
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    mlir::MutableOperandRange getDpsInitsMutable() {
      return mlir::MutableOperandRange(getOperation(), getNumOperands() - 2, 2);
    }
  }];
}

#endif // KILN_LOWERING_KERNELS_KERNELOPS_TD
