//===- CudaAttention.h - the online softmax of the attention kernels -*- C++ -*-===//
//
// What the tensor-core attention kernels (mma.sync: CudaMmaAttention.cpp;
// wgmma: CudaWgmmaAttention.cpp) share: both hold a thread's scores of a
// key tile as m16n8 C fragments side by side (flat index 4j + e: key
// 8j + 2 * inQuad + e % 2 of the tile, row A for e < 2, else row B, eight
// rows below), so the online softmax over them, the P fragments it gives
// and the final O / sum are the same code.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LOWERING_CUDA_CUDAATTENTION_H
#define KILN_LOWERING_CUDA_CUDAATTENTION_H

#include "kiln/Lowering/Kernels/KernelOps.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"

namespace kiln {

/// Where a thread's fragments lie: batch entry, rows A and B, its lane in
/// its quad, and the first query row of its warp; and the query rows and
/// keys there are (constants, or run-time sizes).
struct AttentionFragments {
  kernel::AttentionOp op;
  mlir::Value batch, rowA, rowB, inQuad, warpRow0;
  mlir::Value rows, keys;
};

/// A thread's online-softmax state of rows A and B: the running max of the
/// base-2 scores, and its lane-partial sum of the probabilities.
struct SoftmaxState {
  mlir::Value maxA, maxB, sumA, sumB;
  /// Max -inf, sums 0.
  static SoftmaxState initial(mlir::OpBuilder &b, mlir::Location loc);
  llvm::SmallVector<mlir::Value> values() const { return {maxA, maxB, sumA, sumB}; }
  static SoftmaxState of(mlir::ValueRange v) { return {v[0], v[1], v[2], v[3]}; }
};

/// One key tile of the online softmax.
struct SoftmaxStep {
  /// 2^(score - max), unrounded (the sums take them so), flat as the scores.
  llvm::SmallVector<mlir::Value> probs;
  /// What O's rows A and B are multiplied by before P V is added.
  mlir::Value alphaA, alphaB;
  SoftmaxState next;
};

/// The online softmax of the key tile from key `key0` over a thread's f32
/// `scores`: scaled into base 2 (times log2 e, so that ex2 gives the
/// probabilities), masked (keys past the end, causal, the mask operand;
/// the per-element test only in tiles that need it, a warp-uniform
/// branch), the rows' new max over their quad, probabilities by
/// ex2.approx, rescale factors and sums.
SoftmaxStep onlineSoftmaxStep(mlir::OpBuilder &b, mlir::Location loc,
                              const AttentionFragments &f, llvm::ArrayRef<mlir::Value> scores,
                              mlir::Value key0, const SoftmaxState &state);

/// P's A fragment (m16n8k16: four 32-bit registers) for keys 16kk to
/// 16kk + 15 of the tile, from `probs` rounded to `element`: as
/// nvvm.mma.sync takes it (vector<2xf16> for f16, i32 for bf16), or i32
/// for both with `asBits`.
llvm::SmallVector<mlir::Value> probabilityFragment(mlir::OpBuilder &b, mlir::Location loc,
                                                   llvm::ArrayRef<mlir::Value> probs,
                                                   int64_t kk, mlir::Type element, bool asBits);

/// The row sums of `state`, whole (over the quad).
std::pair<mlir::Value, mlir::Value> rowSums(mlir::OpBuilder &b, mlir::Location loc,
                                            const SoftmaxState &state);

/// Stores `pair` (vector<2xf32>: O at `row`, columns col and col + 1) / `sum`
/// (0 / 0 = NaN for a row whose keys are all masked, as torch gives; 0
/// where there are no keys at all), rounded to the output's type, where
/// row is inside it.
void storeOutputPair(mlir::OpBuilder &b, mlir::Location loc, const AttentionFragments &f,
                     mlir::Value row, mlir::Value col, mlir::Value pair, mlir::Value sum);

/// Whether a tensor-core kernel takes `op`: f16/bf16 whose head dims suit
/// (fitsTensorCoreAttention), on dense buffers.
bool fitsTensorCoreKernel(kernel::AttentionOp op);

/// Erases `op`, which a kernel built before it replaces, and its f32
/// scratch buffer where nothing else uses it (the kernels keep their sums
/// in registers).
void eraseReplacedAttention(kernel::AttentionOp op);

/// Size `d` of a buffer (`?`: ShapedType::kDynamic).
inline int64_t dimOf(mlir::Value buffer, unsigned d) {
  return mlir::cast<mlir::MemRefType>(buffer.getType()).getDimSize(d);
}

/// Size `d` of a buffer at `b`: a constant, or memref.dim of a `?` dim.
inline mlir::Value sizeValue(mlir::OpBuilder &b, mlir::Location loc, mlir::Value buffer,
                             unsigned d) {
  return b.createOrFold<mlir::memref::DimOp>(loc, buffer, d);
}

/// An attention kernel's sizes on the host (constants where static, host
/// arithmetic of run-time sizes): blocks of `rowTile` query rows of each
/// batch entry, keys in tiles of `keyTile`.
struct AttentionGrid {
  mlir::Value batch, rows, keys, rowTiles, keyTiles;
  mlir::Value blocks; // rowTiles x batch
};
AttentionGrid attentionGrid(mlir::OpBuilder &b, mlir::Location loc, kernel::AttentionOp op,
                            int64_t rowTile, int64_t keyTile);

} // namespace kiln

#endif
