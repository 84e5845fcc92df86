//===- VectorUtils.h - vectorising kernel bodies along the innermost loop -*- C++ -*-===//
//
// Shared by kiln-vectorize (CPU and GPU elementwise kernels) and
// kiln-gpu-row-reductions: how an operand is read along the innermost loop,
// what alignment its layout proves, and the body of a linalg.generic cloned
// on scalars or on vectors.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LOWERING_COMMON_VECTORUTILS_H
#define KILN_LOWERING_COMMON_VECTORUTILS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include <optional>

namespace kiln {

/// How an operand is read along the vectorised loop: a vector at the
/// loop's index, one value for every lane, a vector read backwards (a
/// flip), a vector at the loop's index plus an offset free of it (a
/// window's tap, `ow + kw`), which has no known alignment, or every
/// stride-th element from such an index (`2 * ow + kw`).
enum class Access { Vector, Splat, Reversed, Shifted, Strided };

/// The reads besides Vector and Splat that a caller takes.
struct ReadKinds {
  bool reversed = false;
  bool windows = false; // Shifted and Strided
};

/// The largest stride of a Strided read: its vector loads take stride
/// times the lanes.
inline constexpr int64_t kMaxReadStride = 4;

/// kiln-vectorize's outer reductions (a sum over dim 0, a few rows times
/// a matrix) run in column blocks of at most this many bytes of each output
/// row, which stay in L1 through the reduction, and only where the
/// reduction has at least kColumnBlockRows rows. (Taking 4 rows a step, on
/// 2 AVX-512 cores, alternated: a 1x4096 @ 4096^2 gemv 1.5-2.0 ms at 2 KiB,
/// 0.95-1.5 at 8 KiB; a 4096^2 f32 sum over dim 0 1.1-1.2 / 0.85-1.0; 16
/// KiB no better than 8.)
inline constexpr int64_t kColumnBlockBytes = 8192;
inline constexpr int64_t kColumnBlockRows = 64;

/// True if the memref's innermost dim has unit stride.
bool unitInnerStride(mlir::Value memref);
/// How operand `map` reads along loop `last`, or nullopt if in no way
/// `kinds` allows.
std::optional<Access> classify(mlir::AffineMap map, mlir::Value memref,
                               unsigned last, ReadKinds kinds = {});
/// The coefficient of loop `last` in `map`'s innermost result (a Strided
/// read's stride), from -1 to kMaxReadStride; 0 where it is none of them.
int64_t innerCoefficient(mlir::AffineMap map, unsigned last);
/// The alignment attribute (bytes, at most 16) that every `width`-wide
/// access at a multiple-of-`width` innermost index of `memref` has, or null.
/// Buffers themselves are at least 16-byte aligned.
mlir::IntegerAttr alignmentAttr(mlir::OpBuilder &b, mlir::Value memref,
                                int64_t width);
/// The indices `map` gives at loop indices `ivs`.
llvm::SmallVector<mlir::Value> indicesFor(mlir::OpBuilder &b,
                                          mlir::Location loc,
                                          mlir::AffineMap map,
                                          mlir::ValueRange ivs);
/// Clones `op` (an arith/math op) with `mapping`; with `width` > 0, as a
/// vector op, its operands from outside its block mapped to splats (a
/// constant becomes a splat constant).
void cloneOnVectors(mlir::OpBuilder &b, mlir::Location loc, mlir::Operation &op,
                    mlir::IRMapping &mapping, int64_t width);
/// Clones the body ops (all but the terminator and `skip`) with `mapping`
/// (block args already mapped); with `width` > 0, as vector ops. Values
/// from outside the body that the ops, the terminator or `skip` use are
/// mapped too (to splats of them with `width` > 0).
void cloneBody(mlir::OpBuilder &b, mlir::Location loc, mlir::Block &body,
               mlir::IRMapping &mapping, int64_t width,
               mlir::Operation *skip = nullptr);

/// The iterations [offset, offset + size) of loop `dim`.
struct LoopSlice {
  unsigned dim;
  mlir::OpFoldResult offset, size;
};
/// A clone of `op` at `b` on subviews of its operands that runs only the
/// iterations in `slices` of the loops they name (all of the others): the
/// iterations a vectorised loop leaves over. An operand indexed by a sliced
/// loop inside a larger expression (a flip's `c - j`) is taken whole along
/// that index, the loop shifted by the slice's offset, which must then be
/// a constant.
mlir::linalg::GenericOp cloneOnSlices(mlir::OpBuilder &b, mlir::Location loc,
                                      mlir::linalg::GenericOp op,
                                      llvm::ArrayRef<LoopSlice> slices);

/// The transpose of the V x V matrix whose rows are `rows` (V vectors of V
/// lanes, V a power of two), as V vectors: its columns.
llvm::SmallVector<mlir::Value> transposeInRegisters(mlir::OpBuilder &b, mlir::Location loc,
                                                   llvm::SmallVector<mlir::Value> rows);

} // namespace kiln

#endif
