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

/// An scf.parallel over `lbs` to `ubs` by `steps` whose tasks run at least
/// `minTaskSize` iterations (kMinTaskSizeAttr), body(ivs) with an iv per
/// dim. A dim of one static iteration is no loop dim (its iv is its lower
/// bound): the canonicalizer would fold such a dim into a new loop and drop
/// the attribute with it, leaving the loop to the default task size.
void buildTaskLoop(mlir::OpBuilder &b, mlir::Location loc, mlir::ValueRange lbs,
                   mlir::ValueRange ubs, mlir::ValueRange steps, int64_t minTaskSize,
                   llvm::function_ref<void(mlir::OpBuilder &, mlir::ValueRange)> body);
/// The same over [0, size) of each of `sizes`, each iteration a task.
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
