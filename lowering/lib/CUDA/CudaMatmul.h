//===- CudaMatmul.h - matmul kernel builders of kiln-cuda-tile-matmul -*- C++ -*-===//
#ifndef KILN_LOWERING_CUDA_CUDAMATMUL_H
#define KILN_LOWERING_CUDA_CUDAMATMUL_H

#include "kiln/Lowering/CUDA/MatmulTunables.h"
#include "kiln/Lowering/Common/GatheredOperand.h"
#include "kiln/Lowering/Common/MatmulEpilogue.h"
#include "kiln/Lowering/Common/MatmulKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace kiln {

/// Whether `op`, run between what wrote a matmul's operands and the
/// matmul, writes nothing but buffers allocated in the function (which
/// nothing else aliases) and the matmul's C: whatever those writers read
/// is still there when the matmul runs.
bool keepsOperandsIntact(mlir::Operation *op, mlir::linalg::LinalgOp matmul);

/// B ([batch,] K x N) as a copy generic wrote it, transposed, from a
/// [batch,] N x K buffer: K-major already, as the wgmma kernel reads it.
struct TransposedOperand {
  mlir::linalg::GenericOp copy;
  /// The [batch,] N x K buffer.
  mlir::Value source() { return copy.getDpsInputs()[0]; }
  /// Erases the copy and its buffer once nothing else reads it.
  void erase();
};

/// `b` (the matmul's B, or the buffer its f8 decode reads) as such a copy,
/// where only `matmul` (or the decode) reads it and nothing between the
/// copy and `matmul` writes memory other than buffers allocated there.
std::optional<TransposedOperand> findTransposedOperand(mlir::linalg::LinalgOp matmul,
                                                       mlir::Value b);

/// An f32 matmul of two f8 matrices: the marked decodes
/// (kFloat8DecodeAttr) that write its operands right before it, whose f8
/// buffers (i8) a kernel may read instead (CudaFloat8Operands.cpp).
struct Float8Operands {
  mlir::linalg::GenericOp decodeA, decodeB;
  mlir::Value a() { return decodeA.getDpsInputs()[0]; }
  mlir::Value b() { return decodeB.getDpsInputs()[0]; }
  /// The f8 type a decode reads (Float8E4M3FNType or Float8E5M2Type).
  static mlir::Type typeOf(mlir::linalg::GenericOp decode);
  /// Erases the decodes and their buffers once the matmul is replaced.
  void erase();
};

/// The f8 matrices `matmul` multiplies, where both operands are such
/// decodes of contiguous f8 buffers and nothing between them and the
/// matmul writes memory.
std::optional<Float8Operands> findFloat8Operands(mlir::linalg::LinalgOp matmul);

/// Whether the tensor-core kernel takes this matmul: f16 or bf16 inputs of
/// one type (f32 too when `tf32`), contiguous, K a multiple of 16 bytes
/// (A's rows are whole 16-byte copies).
bool fitsMmaMatmul(mlir::linalg::LinalgOp op, bool tf32);

/// Replaces the matmul by the tensor-core kernel (mma.sync fed by ldmatrix
/// from swizzled shared memory, filled by cp.async `stages` deep), using at
/// most `maxSharedBytes` of shared memory.
mlir::LogicalResult buildMmaMatmul(mlir::linalg::LinalgOp op, const CudaMmaMatmulTunables &tiling,
                                   int64_t maxSharedBytes);

/// `tiling` with its tile N halved (down to 64) while the kernel would
/// launch fewer than `blocks` blocks (small matmuls, convs of small
/// images): narrower tiles, more of them, to fill the GPU.
CudaMmaMatmulTunables narrowTilesToFill(mlir::linalg::LinalgOp op, CudaMmaMatmulTunables tiling,
                                        int64_t blocks);

/// Whether the warpgroup kernel takes this matmul: f16 or bf16 (f32 too
/// when `tf32`) where fitsMmaMatmul holds, B not gathered, a 16-bit B's
/// rows whole 16-byte copies, a tf32 C's rows even. Sizes known only at
/// run time are left to wgmmaMisfitAtRunTime.
bool fitsWgmmaMatmul(mlir::linalg::LinalgOp op, bool tf32);

/// `tiling` whose split K is 0 ("fill the GPU") resolved for a
/// static-sized matmul of `elementBytes` inputs (as the kernel reads them:
/// f8 1) on a GPU of `fillBlocks` SMs (one wgmma block each): K split
/// into parts (each a block; a second kernel adds them) and, with
/// `narrow`, tile N narrowed (with more stages), where an estimate of the
/// kernel's time says the GPU fills better for it: the few-tile shapes (a
/// decode step's M of 16, M x N of 512 x 1024 with a long K). With `rows`,
/// as if C had that many rows (a bucket of a rowsOnlyAtRunTime matmul's).
/// Unchanged for other run-time sizes or a `fillBlocks` of 0 (0 parts
/// build an unsplit kernel).
CudaWgmmaMatmulTunables fillGpuWithWgmma(mlir::linalg::LinalgOp op,
                                         CudaWgmmaMatmulTunables tiling, int64_t fillBlocks,
                                         bool narrow, int64_t maxSharedBytes,
                                         int64_t elementBytes, int64_t rows = 0);

/// A new buffer holding `matrix` ([batch,] R, C), with `transpose` as
/// [batch,] C, R, its rows zero-padded to `paddedCols` (static sizes; 0:
/// not padded), copied on the GPU where `launchIf` holds (gridWhere)
/// (CudaMatrixCopies.cpp).
mlir::Value copyMatrix(mlir::OpBuilder &b, mlir::Location loc, mlir::Value matrix,
                       bool transpose, int64_t paddedCols, mlir::Value launchIf);

/// Whether the warpgroup kernel takes this matmul through zero-padded
/// copies of its operands (paddedWgmmaOperands): static dense f16/bf16
/// (f32 too when `tf32`) matrices whose K is not whole 16-byte units (TMA's
/// strides), f32 C. Copying A and B costs a pass over each; the SIMT
/// kernel it replaces was several times slower (3000x511x257).
bool fitsWgmmaMatmulWithPaddedK(mlir::linalg::LinalgOp op, bool tf32);

/// Where the wgmma kernel reads its operands, when not the matmul's own:
/// the f8 matrices its operands decode; a [batch,] N x K buffer holding B
/// transposed (TransposedOperand), read K-major; a copy of A.
struct WgmmaOperands {
  std::optional<Float8Operands> f8;
  mlir::Value kMajorB;
  mlir::Value a;
};

/// Before `op`, copies of A ([batch,] M x K') and of B transposed
/// ([batch,] N x K'), K' the next whole 16-byte units, zeros past K.
WgmmaOperands paddedWgmmaOperands(mlir::OpBuilder &b, mlir::Location loc,
                                  mlir::linalg::LinalgOp op);

/// Elements of a run of B's K that gatherKMajor moves as one 16-byte copy.
constexpr int64_t kGatherRun = 8;

/// Whether the warpgroup kernel takes this matmul through a K-major copy
/// of its gathered B (gatherKMajor): conv's channels-last im2col patches,
/// static f16/bf16, A one dense matrix every batch shares, of 256 rows or
/// more (output channels), f32 C.
bool fitsWgmmaMatmulWithGatheredB(mlir::linalg::LinalgOp op, const GatheredOperand &gathered);

/// Before the matmul, a new buffer [batch, N, K] holding B ([batch, K, N],
/// `matrix`) transposed, read through `gathered`'s map by 16-byte runs:
/// what the wgmma kernel reads K-major instead of the patches the
/// mma.sync kernel gathers in place.
mlir::Value gatherKMajor(mlir::OpBuilder &b, mlir::Location loc, const GatheredOperand &gathered,
                         mlir::Value matrix);

/// Whether the warpgroup kernel takes this f32 matmul of f8 matrices
/// (findFloat8Operands): static sizes, K a multiple of 16, N even.
bool fitsFloat8WgmmaMatmul(mlir::linalg::LinalgOp op);

/// On the host before `op`, an index that is 0 where its sizes suit TMA
/// at run time (rows of A and B whole 16-byte units, K not empty; a tf32
/// C's rows even) and positive where not. A constant where they are static.
mlir::Value wgmmaMisfitAtRunTime(mlir::OpBuilder &b, mlir::Location loc,
                                 mlir::linalg::LinalgOp op);

/// Builds the Hopper kernel of `op` (wgmma from 128-byte-swizzled shared
/// memory filled by TMA `stages` deep; sm_90a) before it, launched where
/// `launchIf` holds (gridWhere). Static or run-time sizes; f32 inputs as
/// tf32, B copied transposed first; `operands` say where it reads them
/// instead of the matmul's (f8: B copied transposed too, unless `kMajorB`
/// has it). With a split K (static sizes, or rows alone at run time), each
/// part's sums go to a buffer of partial sums, which a second kernel adds
/// into C through the epilogue. With `fillBlocks` (the GPU's SMs), the kernel is persistent:
/// at most that many blocks, each taking tiles that many apart, its next
/// tile's loads under its last one's stores. The caller erases what `op`
/// no longer needs.
mlir::LogicalResult buildWgmmaMatmul(mlir::linalg::LinalgOp op,
                                     const CudaWgmmaMatmulTunables &tiling,
                                     int64_t maxSharedBytes, int64_t fillBlocks,
                                     const MatmulFusion &fused, mlir::Value launchIf,
                                     const WgmmaOperands &operands);

} // namespace kiln

#endif
