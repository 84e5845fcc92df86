//===- CudaMatrixCopies.cpp - copies that feed the wgmma kernel's TMA ------===//
//
// TMA reads rows of whole 16-byte units, and wgmma transposes only 16-bit
// operands: a tf32 or f8 B is copied transposed (K-major), and a matmul
// whose K is no whole 16-byte units reads zero-padded copies of A and of B
// transposed. One kernel makes them all (copyMatrix). conv's im2col
// patches, which the mma.sync kernel gathers in place, are copied K-major
// for the wgmma kernel (gatherKMajor): 16-byte runs of channels.
//
//===----------------------------------------------------------------------===//
#include "CudaMatmul.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace kiln {

/// A new buffer holding `matrix` ([batch,] R, C), with `transpose` as
/// [batch,] C, R, its rows zero-padded to `paddedCols` (static sizes; 0:
/// not padded), copied on the GPU where `launchIf` holds (gridWhere): 32 x
/// 32 tiles through workgroup memory, so that both the reads of rows of
/// `matrix` and the writes of rows of the copy are coalesced; a padding
/// column keeps the tile's column reads free of bank conflicts.
Value copyMatrix(OpBuilder &b, Location loc, Value matrix, bool transpose, int64_t paddedCols,
                 Value launchIf) {
  constexpr int64_t kTile = 32, kRowsPerPass = 8;
  auto type = cast<MemRefType>(matrix.getType());
  const int64_t rank = type.getRank();
  IndexBuilder x{b, loc};
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < rank; ++d)
    sizes.push_back(b.createOrFold<memref::DimOp>(loc, matrix, d));
  SmallVector<int64_t> shape(type.getShape());
  if (transpose) {
    std::swap(sizes[rank - 1], sizes[rank - 2]);
    std::swap(shape[rank - 1], shape[rank - 2]);
  }
  // The copy's rows and columns, and the columns that hold `matrix`'s
  // elements (the rest are zeros).
  Value rows = sizes[rank - 2], cols = sizes[rank - 1], filled = cols;
  if (paddedCols > 0 && !ShapedType::isDynamic(shape.back()) && paddedCols > shape.back()) {
    shape.back() = paddedCols;
    cols = x.c(paddedCols);
  }
  SmallVector<Value> dynamicSizes;
  for (int64_t d = 0; d < rank; ++d)
    if (ShapedType::isDynamic(shape[d]))
      dynamicSizes.push_back(sizes[d]);
  Value copy = memref::AllocOp::create(b, loc, MemRefType::get(shape, type.getElementType()),
                                       dynamicSizes);
  auto ceilDiv = [&](Value v) { return b.createOrFold<arith::CeilDivSIOp>(loc, v, x.c(kTile)); };
  auto workgroup = gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  Type tileType = MemRefType::get({kTile, kTile + 1}, type.getElementType(), AffineMap(),
                                  workgroup);
  auto launch = gpu::LaunchOp::create(
      b, loc, gridWhere(b, loc, launchIf, ceilDiv(rows)), ceilDiv(cols),
      rank == 3 ? sizes[0] : x.c(1), x.c(kTile), x.c(kRowsPerPass), x.c(1),
      /*dynamicSharedMemorySize=*/nullptr, /*asyncTokenType=*/nullptr,
      /*asyncDependencies=*/{}, TypeRange{tileType});
  OpBuilder kb = OpBuilder::atBlockBegin(&launch.getBody().front());
  IndexBuilder t{kb, loc};
  Value tile = launch.getWorkgroupAttributions()[0];
  gpu::KernelDim3 block = launch.getBlockIds(), thread = launch.getThreadIds();
  Value batch = rank == 3 ? block.z : Value();
  // The block's tile of the copy starts at (row0, col0).
  Value row0 = t.mul(block.x, kTile), col0 = t.mul(block.y, kTile);
  // Four passes over a tile of a rows x cols matrix: `move` takes element
  // (r, c) of the tile, r = thread.y + 8i and c = thread.x, which is its
  // element (first row + r, first col + c), where that lies inside the
  // matrix.
  auto passes = [&](Value rows, Value cols, Value firstRow, Value firstCol,
                    function_ref<void(OpBuilder &, Value, Value, Value, Value)> move) {
    for (int64_t i = 0; i < kTile / kRowsPerPass; ++i) {
      Value r = t.add(thread.y, i * kRowsPerPass);
      Value row = t.add(firstRow, r), col = t.add(firstCol, thread.x);
      scf::IfOp::create(kb, loc, t.both(t.lt(row, rows), t.lt(col, cols)),
                        [&](OpBuilder &ib, Location) {
                          move(ib, r, thread.x, row, col);
                          scf::YieldOp::create(ib, loc);
                        });
    }
  };
  // The tile of `matrix`: transposed, the copy's tile (row0, col0) is its
  // tile (col0, row0).
  passes(transpose ? filled : rows, transpose ? rows : filled, transpose ? col0 : row0,
         transpose ? row0 : col0, [&](OpBuilder &ib, Value r, Value c, Value row, Value col) {
           Value v =
               memref::LoadOp::create(ib, loc, matrix, matrixIndices(matrix, batch, row, col));
           memref::StoreOp::create(ib, loc, v, tile, ValueRange{r, c});
         });
  gpu::BarrierOp::create(kb, loc);
  passes(rows, cols, row0, col0, [&](OpBuilder &ib, Value r, Value c, Value row, Value col) {
    Value v = memref::LoadOp::create(ib, loc, tile,
                                     transpose ? ValueRange{c, r} : ValueRange{r, c});
    if (cols != filled) {
      Value zero = arith::ConstantOp::create(ib, loc, ib.getZeroAttr(type.getElementType()));
      v = arith::SelectOp::create(ib, loc, IndexBuilder{ib, loc}.lt(col, filled), v, zero);
    }
    memref::StoreOp::create(ib, loc, v, copy, matrixIndices(copy, batch, row, col));
  });
  gpu::TerminatorOp::create(kb, loc);
  b.setInsertionPointAfter(launch);
  return copy;
}

bool fitsWgmmaMatmulWithPaddedK(linalg::LinalgOp op, bool tf32) {
  auto a = cast<MemRefType>(op.getDpsInputs()[0].getType());
  auto b = cast<MemRefType>(op.getDpsInputs()[1].getType());
  auto c = cast<MemRefType>(op.getDpsInits()[0].getType());
  Type element = a.getElementType();
  if (!(element.isF16() || element.isBF16() || (tf32 && element.isF32())) ||
      b.getElementType() != element || !c.getElementType().isF32())
    return false;
  auto dense = [](MemRefType t) { return t.hasStaticShape() && t.getLayout().isIdentity(); };
  int64_t k = a.getShape().back(), bytes = element.getIntOrFloatBitWidth() / 8;
  return dense(a) && dense(b) && dense(c) && k > 0 && k * bytes % 16 != 0;
}

WgmmaOperands paddedWgmmaOperands(OpBuilder &b, Location loc, linalg::LinalgOp op) {
  Value a = op.getDpsInputs()[0];
  auto type = cast<MemRefType>(a.getType());
  // Elements per 16-byte unit (TMA's stride granule).
  int64_t k = type.getShape().back(), perUnit = 16 * 8 / type.getElementTypeBitWidth();
  int64_t padded = llvm::alignTo(k, perUnit);
  return {std::nullopt,
          copyMatrix(b, loc, op.getDpsInputs()[1], /*transpose=*/true, padded, Value()),
          copyMatrix(b, loc, a, /*transpose=*/false, padded, Value())};
}

bool fitsWgmmaMatmulWithGatheredB(linalg::LinalgOp op, const GatheredOperand &gathered) {
  auto a = cast<MemRefType>(op.getDpsInputs()[0].getType());
  auto b = cast<MemRefType>(op.getDpsInputs()[1].getType());
  auto c = cast<MemRefType>(op.getDpsInits()[0].getType());
  Type element = a.getElementType();
  int64_t offset;
  SmallVector<int64_t> strides;
  // K (B's rows) and M (C's) static, not empty; the batch and the pixel
  // count (the columns) may be run-time sizes: convs over a run-time batch
  // or over `?` images (whose windows fit, so that they have pixels).
  auto staticRows = [](MemRefType t) {
    return !t.isDynamicDim(1) && t.getDimSize(1) > 0 && t.getDimSize(2) != 0;
  };
  // The copy costs a pass over the patches (each K run written and read
  // once more), which wgmma's speed over mma.sync's pays back only where
  // many rows of A reuse each: on the H200 a 256-channel 3x3 conv on 14x14
  // took 35 against 47 us (copy + GEMM), a 64-channel one on 56x56 82
  // against 68 (docs/cuda.md). A run-time batch has no mma.sync kernel (it
  // needs static sizes), nor do `?` images: there the alternative is the
  // SIMT kernel, much slower.
  constexpr int64_t kMinRows = 256;
  const bool runTimeSizes = !b.hasStaticShape();
  return (runTimeSizes || a.getShape().front() >= kMinRows) &&
         (element.isF16() || element.isBF16()) && b.getElementType() == element &&
         c.getElementType().isF32() && a.getRank() == 2 && b.getRank() == 3 &&
         a.hasStaticShape() && staticRows(b) && staticRows(c) &&
         a.getLayout().isIdentity() && succeeded(a.getStridesAndOffset(strides, offset)) &&
         offset == 0 && a.getNumElements() > 0 && // TMA takes no empty dim (an empty
                                                   // batch launches no blocks)
         gathered.rowsAreRuns(kGatherRun);
}

Value gatherKMajor(OpBuilder &b, Location loc, const GatheredOperand &gathered, Value matrix) {
  constexpr int64_t kThreads = 256;
  auto type = cast<MemRefType>(matrix.getType());
  ArrayRef<int64_t> shape = type.getShape(); // batch, K, columns (batch, columns maybe `?`)
  const int64_t k = shape[1], runs = k / kGatherRun;
  IndexBuilder x{b, loc};
  Value batches = b.createOrFold<memref::DimOp>(loc, matrix, 0);
  Value cols = b.createOrFold<memref::DimOp>(loc, matrix, 2);
  auto copyType = MemRefType::get({shape[0], shape[2], k}, type.getElementType());
  SmallVector<Value> sizes;
  for (auto [d, size] : {std::pair{0, batches}, {2, cols}})
    if (type.isDynamicDim(d))
      sizes.push_back(size);
  Value copy = memref::AllocOp::create(b, loc, copyType, sizes);
  Value total = b.createOrFold<arith::MulIOp>(
      loc, batches, b.createOrFold<arith::MulIOp>(loc, cols, x.c(runs)));
  Value blocks = b.createOrFold<arith::CeilDivSIOp>(loc, total, x.c(kThreads));
  auto launch = gpu::LaunchOp::create(b, loc, blocks, x.c(1), x.c(1), x.c(kThreads), x.c(1),
                                      x.c(1));
  OpBuilder kb = OpBuilder::atBlockBegin(&launch.getBody().front());
  IndexBuilder t{kb, loc};
  // Thread i moves run i % runs of column (i / runs) % cols of batch
  // i / (runs * cols): consecutive threads read consecutive channels and
  // write consecutive K.
  Value i = t.add(t.mul(launch.getBlockIds().x, kThreads), launch.getThreadIds().x);
  scf::IfOp::create(kb, loc, t.lt(i, total), [&](OpBuilder &ib, Location l) {
    IndexBuilder y{ib, l};
    Value row = y.mul(y.rem(i, runs), kGatherRun), rest = y.div(i, runs);
    Value col = arith::RemUIOp::create(ib, l, rest, cols), batch = y.div(rest, cols);
    auto [input, from] = gathered.source(ib, l, ValueRange{batch, row, col});
    auto run = VectorType::get({kGatherRun}, type.getElementType());
    // Runs start on 16 bytes (rowsAreRuns; the buffers' starts are aligned).
    IntegerAttr aligned = ib.getI64IntegerAttr(16);
    Value v = vector::LoadOp::create(ib, l, run, input, from, /*nontemporal=*/false, aligned);
    vector::StoreOp::create(ib, l, v, copy, ValueRange{batch, col, row}, /*nontemporal=*/false,
                            aligned);
    scf::YieldOp::create(ib, l);
  });
  gpu::TerminatorOp::create(kb, loc);
  b.setInsertionPointAfter(launch);
  return copy;
}

} // namespace kiln
