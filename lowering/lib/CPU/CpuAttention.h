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
  /// Lane l: the index l.
  mlir::Value laneIndices(mlir::OpBuilder &b);
  /// body(at) for `at` over [0, end) in steps of `step` vectors.
  void forEachVector(mlir::OpBuilder &b, mlir::Value end, int64_t step,
                     llvm::function_ref<void(mlir::OpBuilder &, mlir::Value)> body);
  /// Row i's (batch n) dot products with keys from.. as scores: scaled,
  /// masked (applyMask), -inf for keys at `limit` or past it (`lanesIds`:
  /// laneIndices).
  mlir::Value scoresOf(mlir::OpBuilder &b, mlir::Value dots, mlir::Value n, mlir::Value i,
                       mlir::Value from, mlir::Value keys, mlir::Value limit, mlir::Value laneIds);
  /// A row's online softmax after a span of keys.
  struct SoftmaxStep {
    mlir::Value max, alpha, total;
  };
  /// The span's `scores` (vectors) against the row's running `max` and
  /// `total`: park(b, v, p) takes vector v's probabilities rounded to the
  /// inputs' type (what V is multiplied by, as flash kernels do; the total
  /// keeps them unrounded). NaN scores propagate: they make the row NaN.
  SoftmaxStep softmaxStep(mlir::OpBuilder &b, llvm::ArrayRef<mlir::Value> scores, mlir::Value max,
                          mlir::Value total,
                          llvm::function_ref<void(mlir::OpBuilder &, int64_t, mlir::Value)> park);
  /// `sums` after keys 0..count of a span: `whole(b, sums)` (the span's
  /// keys unrolled) where the span is whole (count == span), else
  /// addKey(b, jj, sums) for each key jj in turn.
  llvm::SmallVector<mlir::Value> updateSpan(
      mlir::OpBuilder &b, mlir::Value count, int64_t span, mlir::ValueRange sums,
      llvm::function_ref<llvm::SmallVector<mlir::Value>(mlir::OpBuilder &)> whole,
      llvm::function_ref<void(mlir::OpBuilder &, mlir::Value, llvm::MutableArrayRef<mlir::Value>)>
          addKey);
  /// A row's output vector in out's type: its `sums` over its `total`; 0
  /// where there are no keys (`noKeys`: an empty sum), and a row whose keys
  /// are all masked 0 / 0 = NaN, as in torch.
  mlir::Value outputOf(mlir::OpBuilder &b, mlir::Value sums, mlir::Value total, mlir::Value noKeys);
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
