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
  let options = [Option<"attentionFusion", "attention-fusion", "kiln::AttentionFusion",
                        "kiln::AttentionFusion::all",
                        "which kiln.attention ops with static shapes become one "
                        "kiln_kernel.attention (the others: matmul, softmax, matmul)",
                        [{::llvm::cl::values(
                          clEnumValN(kiln::AttentionFusion::none, "none", "none"),
                          clEnumValN(kiln::AttentionFusion::all, "all", "all"),
                          clEnumValN(kiln::AttentionFusion::tensorCores, "tensor-cores",
                                     "f16/bf16 with head dims 64 or 128"))}]>];
  let dependentDialects = ["mlir::linalg::LinalgDialect",
                           "mlir::tensor::TensorDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::math::MathDialect",
                           "mlir::scf::SCFDialect",
                           "kiln::kernel::KilnKernelDialect"];
}

#endif
