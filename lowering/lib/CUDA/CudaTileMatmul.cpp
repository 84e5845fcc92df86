//===- CudaTileMatmul.cpp - the kiln-cuda-tile-matmul pass -----------------===//
//
// f16/bf16 (and f8: CudaFloat8Operands.cpp) matmuls take the Hopper kernel
// (CudaWgmmaMatmul.cpp; split-K: CudaWgmmaSplitK.cpp; a K of no whole
// 16-byte units through padded copies: CudaMatrixCopies.cpp) on sm_90a, the
// tensor-core kernel (CudaMmaMatmul.cpp) elsewhere where the target has one
// and the shapes fit, both for static shapes (wgmma for run-time ones too);
// the others the SIMT kernel both GPU targets build (GPU/SimtMatmul.h),
// static or of run-time size.
//
//===----------------------------------------------------------------------===//
#include "CudaMatmul.h"
#include "kiln/Lowering/GPU/SimtMatmul.h"
#include "kiln/Lowering/CUDA/Passes.h"
#include "kiln/Lowering/Common/MatmulEpilogue.h"
#include "kiln/Lowering/Common/Tuned.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <algorithm>

namespace kiln {
#define GEN_PASS_DEF_KILNCUDATILEMATMUL
#include "kiln/Lowering/CUDA/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using kiln::IndexBuilder;

namespace {

bool hasStaticShapes(linalg::LinalgOp op) {
  return llvm::all_of(op->getOperands(), [](Value v) {
    return cast<MemRefType>(v.getType()).hasStaticShape();
  });
}

struct KilnCudaTileMatmulPass
    : kiln::impl::KilnCudaTileMatmulBase<KilnCudaTileMatmulPass> {
  using KilnCudaTileMatmulBase::KilnCudaTileMatmulBase;
  void runOnOperation() override {
    foldDimsOfCollapses(getOperation());
    SmallVector<linalg::LinalgOp> matmuls;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (kiln::fitsSimtMatmul(op))
        matmuls.push_back(op);
    });
    for (linalg::LinalgOp op : matmuls)
      if (failed(replace(op)))
        return signalPassFailure();
  }

  /// The SIMT kernel's stages are static shared memory (48 KiB at most:
  /// SimtMatmulTarget's default limits).
  kiln::SimtMatmulTarget simtTarget() const { return {.fillBlocks = fillBlocks}; }

  /// memref.dim of a collapse_shape whose dim is one dim of its source
  /// reads the source's size, and a collapse left unused goes: a conv's patches
  /// (a gathered operand) must have no users but their copy and the
  /// matmul, and a run-time batch's size was read through a view of them.
  static void foldDimsOfCollapses(Operation *root) {
    SmallVector<memref::DimOp> dims;
    root->walk([&](memref::DimOp dim) {
      if (dim.getSource().getDefiningOp<memref::CollapseShapeOp>() && dim.getConstantIndex())
        dims.push_back(dim);
    });
    for (memref::DimOp dim : dims) {
      auto collapse = dim.getSource().getDefiningOp<memref::CollapseShapeOp>();
      ReassociationIndices group = collapse.getReassociationIndices()[*dim.getConstantIndex()];
      if (group.size() != 1)
        continue;
      // An allocation's own size operand where it has one (the buffer then
      // keeps no user but its writer and reader).
      OpBuilder b(dim);
      Value size;
      if (auto alloc = collapse.getSrc().getDefiningOp<memref::AllocOp>();
          alloc && alloc.getType().isDynamicDim(group.front()))
        size = alloc.getDynamicSizes()[alloc.getType().getDynamicDimIndex(group.front())];
      else
        size = b.createOrFold<memref::DimOp>(dim.getLoc(), collapse.getSrc(), group.front());
      dim.replaceAllUsesWith(size);
      dim.erase();
      if (collapse->use_empty())
        collapse.erase();
    }
  }

  LogicalResult replace(linalg::LinalgOp op) {
    bool sized = hasStaticShapes(op);
    Value c = op.getDpsInits()[0];
    if (tensorCores && wgmma)
      if (auto f8 = kiln::findFloat8Operands(op); f8 && kiln::fitsFloat8WgmmaMatmul(op))
        return replaceByWgmma(op, sized, f8);
    if (tensorCores && wgmma && kiln::fitsWgmmaMatmul(op, tf32))
      return replaceByWgmma(op, sized);
    if (tensorCores && wgmma && kiln::fitsWgmmaMatmulWithPaddedK(op, tf32))
      return replaceByWgmma(op, sized, std::nullopt, /*padK=*/true);
    if (tensorCores && wgmma)
      if (auto gathered = kiln::findGatheredOperand(op, op.getDpsInputs()[1]);
          gathered && kiln::fitsWgmmaMatmulWithGatheredB(op, *gathered))
        return replaceByWgmma(op, sized, std::nullopt, /*padK=*/false, gathered);
    kiln::CudaMmaMatmulTunables tiling{mmaTileN, mmaStages, mmaStepBytes};
    if (sized && tensorCores && kiln::fitsMmaMatmul(op, tf32)) {
      // The default candidate stands for the untuned choice, which is
      // none of the candidates where the tiles narrow.
      kiln::TuneSpace space = kiln::CudaMmaMatmulTunables::tuneSpace();
      auto tuned = kiln::tunedMatmulConfig(op, space, tf32);
      if (tuned && *tuned != space.candidates.front())
        tiling = kiln::CudaMmaMatmulTunables::fromConfig(*tuned);
      else
        tiling = kiln::narrowTilesToFill(op, tiling, fillBlocks);
      return kiln::buildMmaMatmul(op, tiling, maxSharedBytes);
    }
    kiln::MatmulFusion fused{kiln::zeroFillBefore(op, c), kiln::findMatmulEpilogue(op, c)};
    if (failed(kiln::buildSimtMatmuls(op, fused, Value(), simtTarget())))
      return failure();
    kiln::eraseReplacedMatmul(op, fused.zeroFill, fused.epilogue);
    return success();
  }

  /// The wgmma kernel; where sizes known only at run time may not suit it
  /// (wgmmaMisfitAtRunTime), the SIMT kernels too, launched where it is not
  /// (specialisation on divisibility at run time). With `f8`, the f8
  /// matrices its operands decode (static sizes; untuned, as tune keys
  /// name the matmul's own f32 operands); with `padK`, copies of A and B
  /// whose K is padded (paddedWgmmaOperands; static sizes); with
  /// `gathered`, a K-major copy of the B it gathers (gatherKMajor).
  LogicalResult replaceByWgmma(linalg::LinalgOp op, bool sized,
                               std::optional<kiln::Float8Operands> f8 = std::nullopt,
                               bool padK = false,
                               std::optional<kiln::GatheredOperand> gathered = std::nullopt) {
    Value c = op.getDpsInits()[0];
    Location loc = op.getLoc();
    kiln::CudaWgmmaMatmulTunables tiling{wgmmaTileN, wgmmaStages};
    kiln::TuneSpace space = kiln::CudaWgmmaMatmulTunables::tuneSpace();
    auto tuned = sized && !f8 ? kiln::tunedMatmulConfig(op, space, tf32) : std::nullopt;
    // The default candidate stands for the untuned choice (tiles narrowed
    // and K split by the fill estimate), which is often none of them.
    if (tuned && *tuned == space.candidates.front())
      tuned.reset();
    if (tuned)
      tiling = kiln::CudaWgmmaMatmulTunables::fromConfig(*tuned);
    if (f8)
      tiling.tileN = std::min(tiling.tileN, kiln::CudaWgmmaMatmulTunables::kMaxFloat8TileN);
    if (wgmmaSplitK > 0)
      tiling.splitK = wgmmaSplitK;
    // A tuned tiling keeps its tile; the parts of K still fill the GPU.
    int64_t elementBytes =
        f8 ? 1 : cast<MemRefType>(op.getDpsInputs()[0].getType()).getElementTypeBitWidth() / 8;
    tiling = kiln::fillGpuWithWgmma(op, tiling, fillBlocks, /*narrow=*/!tuned, maxSharedBytes,
                                    elementBytes);
    // The wgmma kernel fuses no epilogue of a batched matmul but conv's
    // (bias, activation).
    kiln::MatmulFusion fused{kiln::zeroFillBefore(op, c),
                             isa<linalg::BatchMatmulOp>(op) && !gathered
                                 ? linalg::GenericOp()
                                 : kiln::findMatmulEpilogue(op, c)};
    // Static sizes are known to fit (fitsWgmmaMatmul), and so does a
    // gathered B of run-time batch or pixel count: read K-major from its
    // copy, whose rows (K) are static and whole 16-byte units, any number
    // of them (fitsWgmmaMatmulWithGatheredB; an empty batch launches no
    // blocks).
    OpBuilder b(op);
    Value misfit = sized || gathered ? Value() : kiln::wgmmaMisfitAtRunTime(b, loc, op);
    std::optional<int64_t> known = misfit ? getConstantIntValue(misfit) : 0;
    IndexBuilder x{b, loc};
    Value fits = known ? Value()
                       : arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, misfit, x.c(0));
    // A B written transposed from an N x K buffer is read from that buffer
    // (static sizes: a SIMT kernel beside the wgmma one would read B).
    std::optional<kiln::TransposedOperand> transposed =
        sized && !padK && !gathered ? kiln::findTransposedOperand(op, f8 ? f8->b() : op.getDpsInputs()[1])
                       : std::nullopt;
    kiln::WgmmaOperands operands{f8, transposed ? transposed->source() : Value(), Value()};
    if (padK)
      operands = kiln::paddedWgmmaOperands(b, loc, op);
    if (gathered)
      operands.kMajorB = kiln::gatherKMajor(b, loc, *gathered, op.getDpsInputs()[1]);
    // Rows alone known at run time (a decode step's tokens): up to a few
    // hundred rows, the tiling and parts of K static rows would take,
    // bucket by bucket; the run-time-size kernel above the last bucket.
    if (known && *known == 0 && !f8 && !padK && !gathered && fillBlocks > 0 &&
        kiln::rowsOnlyAtRunTime(op)) {
      // (0 parts and 1 build the same kernel.)
      auto oneOrMoreParts = [](kiln::CudaWgmmaMatmulTunables t) {
        t.splitK = std::max<int64_t>(t.splitK, 1);
        return t;
      };
      auto buckets = kiln::rowBuckets<kiln::CudaWgmmaMatmulTunables>(
          kiln::CudaWgmmaMatmulTunables::kRowBuckets,
          [&](int64_t rows) {
            return oneOrMoreParts(kiln::fillGpuWithWgmma(op, tiling, fillBlocks, /*narrow=*/true,
                                                         maxSharedBytes, elementBytes, rows));
          },
          [&](int64_t) { return oneOrMoreParts(tiling); });
      // One K-major copy of a tf32 B for all the kernels.
      if (!buckets.empty() && !operands.kMajorB &&
          cast<MemRefType>(op.getDpsInputs()[1].getType()).getElementTypeBitWidth() != 16)
        operands.kMajorB = kiln::copyMatrix(b, loc, op.getDpsInputs()[1], /*transpose=*/true,
                                            /*paddedCols=*/0, Value());
      Value m = b.createOrFold<memref::DimOp>(
          loc, c, cast<MemRefType>(c.getType()).getRank() - 2);
      int64_t bucketRows = 0;
      for (const auto &bucket : buckets) {
        if (failed(kiln::buildWgmmaMatmul(op, bucket.tiling, maxSharedBytes, fillBlocks, fused,
                                          kiln::rowsWithin(b, loc, m, bucketRows,
                                                           bucket.maxRows),
                                          operands)))
          return failure();
        bucketRows = bucket.maxRows;
      }
      if (bucketRows > 0)
        fits = kiln::rowsWithin(b, loc, m, bucketRows, -1);
    }
    if ((!known || *known == 0) &&
        failed(kiln::buildWgmmaMatmul(op, tiling, maxSharedBytes, fillBlocks, fused, fits,
                                      operands)))
      return failure();
    // The SIMT kernels' one unmet requirement where the wgmma kernel fits.
    Value wgmmaFits = known ? Value() : arith::SelectOp::create(b, loc, fits, x.c(1), x.c(0));
    if ((!known || *known != 0) &&
        failed(kiln::buildSimtMatmuls(op, fused, wgmmaFits, simtTarget())))
      return failure();
    kiln::eraseReplacedMatmul(op, fused.zeroFill, fused.epilogue);
    if (f8)
      f8->erase();
    if (transposed)
      transposed->erase();
    if (gathered)
      gathered->erase();
    return success();
  }
};

} // namespace
