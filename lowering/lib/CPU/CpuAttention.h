//===- CpuAttention.h - kiln-cpu-attention-blocks' two kernels --*- C++ -*-===//
//
// kiln-cpu-attention-blocks builds blocks of query rows against packed K
// (CpuAttentionBlocks.cpp) where there are a block's rows, and a row at a
// time against K and V where they stand (CpuAttentionRows.cpp) where there
// are fewer: a decode step.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LOWERING_CPU_CPUATTENTION_H
#define KILN_LOWERING_CPU_CPUATTENTION_H

#include "kiln/Lowering/Kernels/KernelOps.h"

#include "mlir/IR/Builders.h"

namespace kiln {

/// What both kernels build with: `op`, its inputs' element type and f32
/// vectors of `lanes`.
struct AttentionVectors {
  kernel::AttentionOp op;
  int64_t lanes;
  mlir::Location loc;
  mlir::Type f32, element;
  mlir::VectorType vec;

  static AttentionVectors of(kernel::AttentionOp op, int64_t lanes);
  mlir::Value f32Const(mlir::OpBuilder &b, double v);
  mlir::Value splat(mlir::OpBuilder &b, mlir::Value scalar);
  /// An index in every lane of an index vector.
  mlir::Value broadcastIndex(mlir::OpBuilder &b, mlir::Value index);
  /// `v` (a scalar or a vector of `lanes`) as f32.
  mlir::Value widen(mlir::OpBuilder &b, mlir::Value v);
  /// `lanes` elements of `buffer` from `at`, as f32.
  mlir::Value loadVector(mlir::OpBuilder &b, mlir::Value buffer, mlir::ValueRange at);
  /// Scores `s` of row i of batch n against keys j0.. with `op`'s mask
  /// applied, if it has one (a boolean mask's false keys -inf, an additive
  /// one added); lanes past the last of `keys` read the last key's value:
  /// callers mask those anyway.
  mlir::Value applyMask(mlir::OpBuilder &b, mlir::Value s, mlir::Value n, mlir::Value i,
                        mlir::Value j0, mlir::Value keys);
};

/// Whether buildAttentionRows takes `op`: on buffers, `lanes` a power of
/// two, f32 sums of f32, f16 or bf16 inputs, static head dims that are
/// multiples of `lanes`, every operand contiguous along its head dim.
bool takesAttentionRows(kernel::AttentionOp op, int64_t lanes);

/// `op` (takesAttentionRows) built at `b` as a task per query row reading
/// K and V where they stand; `op` itself stays.
void buildAttentionRows(mlir::OpBuilder &b, kernel::AttentionOp op, int64_t lanes);

} // namespace kiln

#endif // KILN_LOWERING_CPU_CPUATTENTION_H
