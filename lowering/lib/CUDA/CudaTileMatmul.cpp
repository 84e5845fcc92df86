//===- CudaTileMatmul.cpp - the kiln-cuda-tile-matmul pass -----------------===//
//
// f16/bf16 matmuls take the Hopper kernel (CudaWgmmaMatmul.cpp) on sm_90a,
// the tensor-core kernel (CudaMmaMatmul.cpp) elsewhere where the
// target has one and the shapes fit; the others the classic SIMT GEMM
// (f16/bf16 inputs are widened to f32 as they are staged): each block owns
// a 128x128 tile of C, each of its 256 threads an 8x8 sub-tile held in registers (eight vector<8xf32>). Per
// step of 8 along K, the block stages an 8x128 slice of A (transposed) and
// of B in workgroup memory; every thread then does 8 rank-1 updates of its
// sub-tile from two 8-wide vector reads of shared memory. Both kernels run
// an elementwise consumer of C (bias, activation) before their stores.
//
//===----------------------------------------------------------------------===//
#include "CudaMatmul.h"
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

namespace kiln {
#define GEN_PASS_DEF_KILNCUDATILEMATMUL
#include "kiln/Lowering/CUDA/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using kiln::IndexBuilder;
using kiln::matrixIndices;

namespace {

constexpr kiln::CudaSimtMatmulTunables kSimt;
constexpr int64_t kTile = kSimt.tile, kStep = kSimt.step, kThreads = kSimt.threads,
                  kPerThread = kSimt.perThread;
static_assert((kTile / kPerThread) * (kTile / kPerThread) == kThreads);

/// `memref[indices]` as f32 where `inBounds`, 0 elsewhere.
Value guardedLoad(OpBuilder &b, Location loc, Value memref, ValueRange indices,
                  Value inBounds) {
  auto load = scf::IfOp::create(
      b, loc, inBounds,
      [&](OpBuilder &tb, Location l) {
        Value v = memref::LoadOp::create(tb, l, memref, indices);
        if (!v.getType().isF32())
          v = arith::ExtFOp::create(tb, l, tb.getF32Type(), v);
        scf::YieldOp::create(tb, l, v);
      },
      [&](OpBuilder &eb, Location l) {
        scf::YieldOp::create(eb, l, arith::ConstantOp::create(eb, l, eb.getF32FloatAttr(0)).getResult());
      });
  return load.getResult(0);
}

LogicalResult tileOnSimtCores(linalg::LinalgOp op) {
  Value a = op.getDpsInputs()[0], bm = op.getDpsInputs()[1], cm = op.getDpsInits()[0];
  bool batched = isa<linalg::BatchMatmulOp>(op);
  auto cShape = cast<MemRefType>(cm.getType()).getShape();
  int64_t batch = batched ? cShape[0] : 1;
  int64_t m = cShape[cShape.size() - 2], n = cShape.back();
  int64_t k = cast<MemRefType>(a.getType()).getShape().back();

  // A bias or activation after the matmul runs before the store.
  linalg::GenericOp epilogue = kiln::findMatmulEpilogue(op, cm);
  OpBuilder b(op);
  Location loc = op.getLoc();
  IndexBuilder ib{b, loc};
  auto workgroup = gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  auto stageType = MemRefType::get({kStep, kTile}, b.getF32Type(), AffineMap(), workgroup);
  auto launch = gpu::LaunchOp::create(
      b, loc, ib.c((n + kTile - 1) / kTile), ib.c((m + kTile - 1) / kTile), ib.c(batch),
      ib.c(kThreads), ib.c(1), ib.c(1), /*dynamicSharedMemorySize=*/nullptr,
      /*asyncTokenType=*/nullptr, /*asyncDependencies=*/{},
      /*workgroupAttributions=*/TypeRange{stageType, stageType});
  Value aStage = launch.getWorkgroupAttributions()[0];
  Value bStage = launch.getWorkgroupAttributions()[1];

  b.setInsertionPointToStart(&launch.getBody().front());
  IndexBuilder kb{b, loc};
  gpu::KernelDim3 block = launch.getBlockIds();
  Value tid = launch.getThreadIds().x;
  Value batchIndex = batched ? block.z : Value();
  Value row0 = kb.mul(block.y, kTile), col0 = kb.mul(block.x, kTile);
  Value tx = kb.rem(tid, kTile / kPerThread), ty = kb.div(tid, kTile / kPerThread);
  // Staging: A as 128 rows x 8 k (two threads per row, 4 k each), B as
  // 8 k x 128 columns (32 threads per k, 4 columns each).
  Value aRow = kb.div(tid, 2), aK = kb.mul(kb.rem(tid, 2), 4);
  Value bK = kb.div(tid, 32), bCol = kb.mul(kb.rem(tid, 32), 4);

  auto vec8 = VectorType::get({kPerThread}, b.getF32Type());
  Value zero = arith::ConstantOp::create(b, loc, vec8, DenseElementsAttr::get(vec8, 0.0f));
  SmallVector<Value> init(kPerThread, zero);
  auto steps = scf::ForOp::create(
      b, loc, kb.c(0), kb.c(k), kb.c(kStep), init,
      [&](OpBuilder &lb, Location l, Value k0, ValueRange acc) {
        IndexBuilder x{lb, l};
        Value aRowG = x.add(row0, aRow), bColG = x.add(col0, bCol), bKG = x.add(k0, bK);
        for (int64_t q = 0; q < 4; ++q) {
          Value ak = x.add(aK, x.c(q));
          Value akG = x.add(k0, ak);
          Value aInside = x.both(x.lt(aRowG, m), x.lt(akG, k));
          Value av = guardedLoad(lb, l, a, matrixIndices(a, batchIndex, aRowG, akG), aInside);
          memref::StoreOp::create(lb, l, av, aStage, ValueRange{ak, aRow});
          Value bc = x.add(bCol, x.c(q));
          Value bcG = x.add(bColG, x.c(q));
          Value bInside = x.both(x.lt(bKG, k), x.lt(bcG, n));
          Value bv = guardedLoad(lb, l, bm, matrixIndices(bm, batchIndex, bKG, bcG), bInside);
          memref::StoreOp::create(lb, l, bv, bStage, ValueRange{bK, bc});
        }
        gpu::BarrierOp::create(lb, l);
        SmallVector<Value> sums(acc.begin(), acc.end());
        Value aAt = x.mul(ty, kPerThread), bAt = x.mul(tx, kPerThread);
        for (int64_t kk = 0; kk < kStep; ++kk) {
          Value aVec = vector::LoadOp::create(lb, l, vec8, aStage, ValueRange{x.c(kk), aAt});
          Value bVec = vector::LoadOp::create(lb, l, vec8, bStage, ValueRange{x.c(kk), bAt});
          for (int64_t i = 0; i < kPerThread; ++i) {
            Value ai = vector::ExtractOp::create(lb, l, aVec, ArrayRef<int64_t>{i});
            Value splat = vector::BroadcastOp::create(lb, l, vec8, ai);
            sums[i] = vector::FMAOp::create(lb, l, splat, bVec, sums[i]);
          }
        }
        gpu::BarrierOp::create(lb, l);
        scf::YieldOp::create(lb, l, sums);
      });

  // C += the sub-tile, element by element inside the matrix.
  Value rowBase = kb.add(row0, kb.mul(ty, kPerThread));
  Value colBase = kb.add(col0, kb.mul(tx, kPerThread));
  for (int64_t i = 0; i < kPerThread; ++i) {
    Value r = kb.add(rowBase, kb.c(i));
    for (int64_t j = 0; j < kPerThread; ++j) {
      Value col = kb.add(colBase, kb.c(j));
      Value inside = kb.both(kb.lt(r, m), kb.lt(col, n));
      Value v = vector::ExtractOp::create(b, loc, steps.getResult(i), ArrayRef<int64_t>{j});
      scf::IfOp::create(b, loc, inside, [&](OpBuilder &tb, Location l) {
        SmallVector<Value> idx = matrixIndices(cm, batchIndex, r, col);
        Value old = memref::LoadOp::create(tb, l, cm, idx);
        Value sum = arith::AddFOp::create(tb, l, old, v);
        if (epilogue)
          kiln::storeThroughEpilogue(tb, l, epilogue, cm, sum, idx, /*width=*/0);
        else
          memref::StoreOp::create(tb, l, sum, cm, idx);
        scf::YieldOp::create(tb, l);
      });
    }
  }
  gpu::TerminatorOp::create(b, loc);
  op->erase();
  if (epilogue)
    epilogue->erase();
  return success();
}

/// f32, f16 or bf16 inputs accumulating into f32, all static.
bool isTileableMatmul(linalg::LinalgOp op) {
  if (!isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op) || !op.hasPureBufferSemantics())
    return false;
  if (!kiln::readsOperandsInPlace(op))
    return false;
  auto staticOf = [](Value v, auto isElement) {
    auto type = dyn_cast<MemRefType>(v.getType());
    return type && type.hasStaticShape() && isElement(type.getElementType());
  };
  auto floatInput = [](Type t) { return t.isF32() || t.isF16() || t.isBF16(); };
  return staticOf(op.getDpsInputs()[0], floatInput) &&
         staticOf(op.getDpsInputs()[1], floatInput) &&
         staticOf(op.getDpsInits()[0], [](Type t) { return t.isF32(); });
}

struct KilnCudaTileMatmulPass
    : kiln::impl::KilnCudaTileMatmulBase<KilnCudaTileMatmulPass> {
  using KilnCudaTileMatmulBase::KilnCudaTileMatmulBase;
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> matmuls;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (isTileableMatmul(op))
        matmuls.push_back(op);
    });
    kiln::CudaMmaMatmulTunables tiling{mmaTileN, mmaStages, mmaStepBytes};
    for (linalg::LinalgOp op : matmuls) {
      if (tensorCores && wgmma && kiln::fitsWgmmaMatmul(op)) {
        kiln::CudaWgmmaMatmulTunables wgmmaTiling{wgmmaTileN, wgmmaStages};
        if (auto tuned = kiln::tunedMatmulConfig(op, kiln::CudaWgmmaMatmulTunables::tuneSpace()))
          wgmmaTiling = kiln::CudaWgmmaMatmulTunables::fromConfig(*tuned);
        if (failed(kiln::buildWgmmaMatmul(op, wgmmaTiling, maxSharedBytes)))
          return signalPassFailure();
        continue;
      }
      bool onTensorCores = tensorCores && kiln::fitsMmaMatmul(op, tf32);
      kiln::CudaMmaMatmulTunables kernelTiling = tiling;
      if (onTensorCores) {
        if (auto tuned = kiln::tunedMatmulConfig(op, kiln::CudaMmaMatmulTunables::tuneSpace(), tf32))
          kernelTiling = kiln::CudaMmaMatmulTunables::fromConfig(*tuned);
        else
          kernelTiling = kiln::narrowTilesToFill(op, tiling, fillBlocks);
      }
      if (failed(onTensorCores ? kiln::buildMmaMatmul(op, kernelTiling, maxSharedBytes)
                               : tileOnSimtCores(op)))
        return signalPassFailure();
    }
  }
};

} // namespace
