//===- Passes.td - kiln lowering: kiln ops -> linalg -------*- tablegen -*-===//
#ifndef KILN_LOWERING_KILNTOLINALG_PASSES_TD
#define KILN_LOWERING_KILNTOLINALG_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertKilnToLinalg : Pass<"kiln-convert-to-linalg", "mlir::ModuleOp"> {
  let summary = "Lower kiln ops to linalg, tensor and scf on signless tensors";
  let description = [{
    Elementwise ops become broadcasting linalg.generic ops with kiln's scalar
    semantics, reductions linalg reductions, movement ops index maps or tensor
    slices. Unsigned element types become signless; function signatures follow.
    Fails with a diagnostic on what the CPU kernels cannot express (dynamic
    shapes, f8 arithmetic).
  }];
  let options = [Option<"fuseAttention", "fuse-attention", "bool", "true",
                        "kiln.attention with static shapes as one "
                        "kiln_kernel.attention (else matmul, softmax, matmul)">];
  let dependentDialects = ["mlir::linalg::LinalgDialect",
                           "mlir::tensor::TensorDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::math::MathDialect",
                           "mlir::scf::SCFDialect",
                           "kiln::kernel::KilnKernelDialect"];
}

#endif
