//===- Passes.h - passes and pipelines every target runs --------*- C++ -*-===//
#ifndef KILN_LOWERING_COMMON_PASSES_H
#define KILN_LOWERING_COMMON_PASSES_H

#include "kiln/Lowering/Common/VectorizeTunables.h"
#include "kiln/Lowering/Kernels/AttentionFusion.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace kiln {

/// On an scf.parallel: the fewest iterations one task of its loop runs
/// (kiln-cpu-async-parallel-for); 1 where each iteration is a task's worth
/// of work of its own (an attention row over all its keys).
inline constexpr llvm::StringLiteral kMinTaskSizeAttr = "kiln.min_task_size";

/// An scf.parallel over [0, size) of each of `sizes`, each iteration a task
/// of its own (kMinTaskSizeAttr 1), body(ivs) with an iv per size. Sizes of
/// a static 1 are no loop dims (their iv is 0): the canonicalizer would
/// fold such a dim away and drop the attribute with it, leaving the loop
/// to one task.
void buildTaskLoop(mlir::OpBuilder &b, mlir::Location loc, mlir::ValueRange sizes,
                   llvm::function_ref<void(mlir::OpBuilder &, mlir::ValueRange)> body);

#define GEN_PASS_DECL
#include "kiln/Lowering/Common/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "kiln/Lowering/Common/Passes.h.inc"

/// kiln -> fused, outlined kernels on linalg tensors (`kiln-to-kernels`).
/// `maxKernelBuffers`: most distinct tensors one kernel may read and write
/// (0: no limit); longer fused chains are split. `attention`: which
/// attention ops become kiln_kernel.attention (the target builds it) rather
/// than matmul, softmax, matmul.
void buildKilnToKernelsPipeline(mlir::OpPassManager &pm,
                                unsigned maxKernelBuffers = 0,
                                AttentionFusion attention = AttentionFusion::all);
/// Kernels on tensors -> one host function on buffers that writes its
/// results into caller-provided out-params.
void buildKernelBufferizationPipeline(mlir::OpPassManager &pm);
/// Registers `kiln-to-kernels`.
void registerKilnCommonPipelines();

} // namespace kiln

#endif
