//===- SpirvTileMatmul.cpp - the kiln-spirv-tile-matmul pass ---------------===//
//
// f16 matmuls with f32 accumulation on the device's cooperative matrices
// (VK_KHR_cooperative_matrix), written as gpu.subgroup_mma_* ops, which
// kiln-spirv-convert-kernels turns into spirv.KHR.CooperativeMatrix*. The
// tiling is VulkanCoopMatmulTunables's, tuned per shape and device
// (default: a workgroup of 2 x 8 subgroups owns a 128 x 256 tile of C; each
// subgroup 64 x 32 of it as accumulators of the device's M x N shape; K
// advances 16 at a time; outputs of few such tiles take 128 x 128 ones).
// K steps through two workgroup-memory stages: while the subgroups
// multiply one stage, each invocation's 8-byte global loads of the next
// `prefetch` steps are in flight (held in registers: Vulkan has no
// asynchronous copy to workgroup memory, and one step of math does not
// hide a load's latency), and after the math the oldest go to the other
// stage, so one barrier per step suffices. Stages hold
// vectors of 4 f16, so each load is one workgroup store (a vector store
// into scalar workgroup memory would be a pointer cast, which logical
// addressing forbids); matrix loads read them with strides in vectors.
// Loads outside the matrix read element 0 and are replaced by zeros (the
// M, N and K edges). At the end, each accumulator goes through a
// per-subgroup scratch matrix in workgroup memory to the subgroup's lanes,
// which store it element by element inside the matrix: C = the tile where
// C was just filled with zeros, C += the tile otherwise, through the
// elementwise consumer of C (bias, activation) when there is one.
// Workgroup tiles are taken in groups of 8 tile rows for L2 reuse.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/Common/MatmulEpilogue.h"
#include "kiln/Lowering/Common/MatmulKernels.h"
#include "kiln/Lowering/Common/Tuned.h"
#include "kiln/Lowering/Common/VectorUtils.h"
#include "kiln/Lowering/SPIRV/MatmulTunables.h"
#include "kiln/Lowering/SPIRV/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVAttributes.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace kiln {
#define GEN_PASS_DEF_KILNSPIRVTILEMATMUL
#include "kiln/Lowering/SPIRV/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using kiln::IndexBuilder;
using kiln::matrixIndices;

namespace {

using Tiling = kiln::VulkanCoopMatmulTunables;
constexpr int64_t kLanes = Tiling::kLanes;

/// Static f16 x f16 -> f32 matmuls read in place whose rows (K for A, N for
/// B) are whole aligned 8-byte loads.
bool fitsCooperativeMatmul(linalg::LinalgOp op) {
  if (!isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op) || !op.hasPureBufferSemantics() ||
      !kiln::readsOperandsInPlace(op))
    return false;
  auto typeOf = [](Value v) { return dyn_cast<MemRefType>(v.getType()); };
  MemRefType a = typeOf(op.getDpsInputs()[0]), b = typeOf(op.getDpsInputs()[1]),
             c = typeOf(op.getDpsInits()[0]);
  for (MemRefType t : {a, b, c})
    if (!t || !t.hasStaticShape() || !t.getLayout().isIdentity())
      return false;
  return a.getElementType().isF16() && b.getElementType().isF16() &&
         c.getElementType().isF32() && a.getShape().back() % kLanes == 0 &&
         b.getShape().back() % kLanes == 0;
}

struct Kernel {
  Tiling t;
  Value a, b, c, batch; // batch: the workgroup's batch index, or null
  int64_t m, n, k;
  int64_t mmaM, mmaN, mmaK, threads;
  Value aStages, bStages;
};

/// The global loads of K step `k0` this invocation stages: A's as
/// tileM rows of stepK, then B's as stepK rows of tileN, in vectors of
/// kLanes (zeros outside the matrix).
SmallVector<Value> loadStep(OpBuilder &b, Location loc, const Kernel &kn, Value tid, Value row0,
                            Value col0, Value k0) {
  IndexBuilder x{b, loc};
  auto vector = VectorType::get({kLanes}, b.getF16Type());
  Value zeros = arith::ConstantOp::create(b, loc, vector, DenseElementsAttr::get(vector, 0.0f));
  Value zero = x.c(0);
  SmallVector<Value> loaded;
  auto load = [&](Value matrix, Value row, Value col, Value inside) {
    SmallVector<Value> at = matrixIndices(matrix, kn.batch, x.select(inside, row, zero),
                                          x.select(inside, col, zero));
    Value v = vector::LoadOp::create(b, loc, vector, matrix, at, /*nontemporal=*/false,
                                     kiln::alignmentAttr(b, matrix, kLanes));
    // SPIR-V 1.3 selects vectors by a vector of conditions.
    Value lanesInside = vector::BroadcastOp::create(
        b, loc, VectorType::get({kLanes}, b.getI1Type()), inside);
    loaded.push_back(x.select(lanesInside, v, zeros));
  };
  const int64_t aPerRow = kn.t.stepK / kLanes, bPerRow = kn.t.tileN / kLanes;
  for (int64_t i = 0; i < kn.t.tileM * aPerRow / kn.threads; ++i) {
    Value q = x.add(tid, i * kn.threads);
    Value row = x.add(row0, x.div(q, aPerRow)), col = x.add(k0, x.mul(x.rem(q, aPerRow), kLanes));
    load(kn.a, row, col, x.both(x.lt(row, kn.m), x.lt(col, kn.k)));
  }
  for (int64_t i = 0; i < kn.t.stepK * bPerRow / kn.threads; ++i) {
    Value q = x.add(tid, i * kn.threads);
    Value row = x.add(k0, x.div(q, bPerRow)), col = x.add(col0, x.mul(x.rem(q, bPerRow), kLanes));
    load(kn.b, row, col, x.both(x.lt(row, kn.k), x.lt(col, kn.n)));
  }
  return loaded;
}

/// Stores loadStep's vectors into stage `stage`.
void storeStep(OpBuilder &b, Location loc, const Kernel &kn, Value tid, Value stage,
               ArrayRef<Value> loaded) {
  IndexBuilder x{b, loc};
  const int64_t aPerRow = kn.t.stepK / kLanes, bPerRow = kn.t.tileN / kLanes;
  const int64_t aLoads = kn.t.tileM * aPerRow / kn.threads;
  for (auto [i, v] : llvm::enumerate(loaded)) {
    bool isA = int64_t(i) < aLoads;
    int64_t perRow = isA ? aPerRow : bPerRow;
    Value q = x.add(tid, (isA ? i : i - aLoads) * kn.threads);
    memref::StoreOp::create(b, loc, v, isA ? kn.aStages : kn.bStages,
                            ValueRange{stage, x.div(q, perRow), x.rem(q, perRow)});
  }
}

void buildCooperativeMatmul(linalg::LinalgOp op, const Tiling &tiling, ArrayRef<int64_t> mmaShape,
                            int64_t subgroupSize) {
  Kernel kn{tiling, op.getDpsInputs()[0], op.getDpsInputs()[1], op.getDpsInits()[0]};
  const Tiling &t = kn.t;
  kn.mmaM = mmaShape[0];
  kn.mmaN = mmaShape[1];
  kn.mmaK = mmaShape[2];
  kn.threads = t.subgroups() * subgroupSize;
  bool batched = isa<linalg::BatchMatmulOp>(op);
  auto cShape = cast<MemRefType>(kn.c.getType()).getShape();
  int64_t batch = batched ? cShape[0] : 1;
  kn.m = cShape[cShape.size() - 2];
  kn.n = cShape.back();
  kn.k = cast<MemRefType>(kn.a.getType()).getShape().back();
  linalg::FillOp zeroFill = kiln::zeroFillBefore(op, kn.c);
  linalg::GenericOp epilogue = kiln::findMatmulEpilogue(op, kn.c);

  OpBuilder b(op);
  Location loc = op.getLoc();
  IndexBuilder ib{b, loc};
  const int64_t numTilesM = (kn.m + t.tileM - 1) / t.tileM;
  const int64_t numTilesN = (kn.n + t.tileN - 1) / t.tileN;
  auto launch = gpu::LaunchOp::create(b, loc, ib.c(numTilesN), ib.c(numTilesM), ib.c(batch),
                                      ib.c(kn.threads), ib.c(1), ib.c(1));
  b.setInsertionPointToStart(&launch.getBody().front());
  IndexBuilder kb{b, loc};
  // Workgroup storage directly: kiln-spirv-convert-kernels's memory-space map for
  // Vulkan does not take #gpu.address_space.
  auto workgroup = spirv::StorageClassAttr::get(b.getContext(), spirv::StorageClass::Workgroup);
  auto shared = [&](ArrayRef<int64_t> shape, Type element) {
    return memref::AllocOp::create(b, loc, MemRefType::get(shape, element, AffineMap(), workgroup))
        .getResult();
  };
  Type f16 = b.getF16Type(), f32 = b.getF32Type();
  auto lanes = VectorType::get({kLanes}, f16);
  kn.aStages = shared({2, t.tileM, t.aStride() / kLanes}, lanes);
  kn.bStages = shared({2, t.stepK, t.bStride() / kLanes}, lanes);
  Value scratch = shared({t.subgroups(), kn.mmaM, kn.mmaN}, f32);

  gpu::KernelDim3 block = launch.getBlockIds();
  Value tid = launch.getThreadIds().x;
  kn.batch = batched ? block.z : Value();
  auto [tileRow, tileCol] = kiln::groupedTileOrder(kb, block, kb.c(numTilesM), kb.c(numTilesN));
  Value row0 = kb.mul(tileRow, t.tileM), col0 = kb.mul(tileCol, t.tileN);
  Value subgroup = gpu::SubgroupIdOp::create(b, loc, IntegerAttr{});
  Value lane = gpu::LaneIdOp::create(b, loc, IntegerAttr{});
  Value subgroupRow = kb.mul(kb.div(subgroup, t.subgroupsN), t.subgroupTileM());
  Value subgroupCol = kb.mul(kb.rem(subgroup, t.subgroupsN), t.subgroupTileN());
  Value subgroupVectorCol = kb.div(subgroupCol, kLanes);

  // Step 0 staged; the loads of steps 1 to prefetch - 1 in flight (issued
  // before step 0 is stored, so their latency overlaps it).
  auto loadAt = [&](OpBuilder &lb, Location l, Value step) {
    IndexBuilder x{lb, l};
    return loadStep(lb, l, kn, tid, row0, col0, x.mul(step, t.stepK));
  };
  SmallVector<Value> first = loadAt(b, loc, kb.c(0)), inFlight;
  for (int64_t d = 1; d < t.prefetch; ++d)
    llvm::append_range(inFlight, loadAt(b, loc, kb.c(d)));
  storeStep(b, loc, kn, tid, kb.c(0), first);
  gpu::BarrierOp::create(b, loc);

  const int64_t tilesM = t.subgroupTileM() / kn.mmaM, tilesN = t.subgroupTileN() / kn.mmaN;
  const int64_t accumulators = tilesM * tilesN;
  auto aType = gpu::MMAMatrixType::get({kn.mmaM, kn.mmaK}, f16, "AOp");
  auto bType = gpu::MMAMatrixType::get({kn.mmaK, kn.mmaN}, f16, "BOp");
  auto cType = gpu::MMAMatrixType::get({kn.mmaM, kn.mmaN}, f32, "COp");
  Value zero = gpu::SubgroupMmaConstantMatrixOp::create(
      b, loc, cType, arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0)));
  SmallVector<Value> init(accumulators, zero);
  llvm::append_range(init, inFlight);
  const int64_t steps = (kn.k + t.stepK - 1) / t.stepK;
  auto loop = scf::ForOp::create(
      b, loc, kb.c(0), kb.c(steps), kb.c(1), init,
      [&](OpBuilder &lb, Location l, Value step, ValueRange carried) {
        IndexBuilder x{lb, l};
        // The loads of step + prefetch join those in flight (past the last
        // step they read zeros); the oldest, step + 1's, are staged below.
        SmallVector<Value> loads(carried.begin() + accumulators, carried.end());
        llvm::append_range(loads, loadAt(lb, l, x.add(step, t.prefetch)));
        const size_t perStep = loads.size() / t.prefetch;
        Value stage = x.rem(step, 2);
        SmallVector<Value> sums(carried.begin(), carried.begin() + accumulators);
        // Stage columns count vectors of kLanes, and so do the strides.
        for (int64_t kk = 0; kk < t.stepK; kk += kn.mmaK) {
          SmallVector<Value> aTiles, bTiles;
          for (int64_t i = 0; i < tilesM; ++i)
            aTiles.push_back(gpu::SubgroupMmaLoadMatrixOp::create(
                lb, l, aType, kn.aStages,
                ValueRange{stage, x.add(subgroupRow, i * kn.mmaM), x.c(kk / kLanes)},
                lb.getIndexAttr(t.aStride() / kLanes), UnitAttr()));
          for (int64_t j = 0; j < tilesN; ++j)
            bTiles.push_back(gpu::SubgroupMmaLoadMatrixOp::create(
                lb, l, bType, kn.bStages,
                ValueRange{stage, x.c(kk), x.add(subgroupVectorCol, j * kn.mmaN / kLanes)},
                lb.getIndexAttr(t.bStride() / kLanes), UnitAttr()));
          for (int64_t i = 0; i < tilesM; ++i)
            for (int64_t j = 0; j < tilesN; ++j) {
              Value &sum = sums[i * tilesN + j];
              sum = gpu::SubgroupMmaComputeOp::create(lb, l, aTiles[i], bTiles[j], sum,
                                                      UnitAttr(), UnitAttr());
            }
        }
        // The other stage was last read by the previous step's math, which
        // every invocation finished before that step's barrier.
        storeStep(lb, l, kn, tid, x.rem(x.add(step, 1), 2),
                  ArrayRef<Value>(loads).take_front(perStep));
        gpu::BarrierOp::create(lb, l);
        llvm::append_range(sums, ArrayRef<Value>(loads).drop_front(perStep));
        scf::YieldOp::create(lb, l, sums);
      });

  // Each accumulator through the subgroup's scratch matrix to its lanes.
  for (int64_t i = 0; i < tilesM; ++i)
    for (int64_t j = 0; j < tilesN; ++j) {
      gpu::SubgroupMmaStoreMatrixOp::create(b, loc, loop.getResult(i * tilesN + j), scratch,
                                            ValueRange{subgroup, kb.c(0), kb.c(0)},
                                            b.getIndexAttr(kn.mmaN), UnitAttr());
      gpu::BarrierOp::create(b, loc);
      Value rowBase = kb.add(kb.add(row0, subgroupRow), i * kn.mmaM);
      Value colBase = kb.add(kb.add(col0, subgroupCol), j * kn.mmaN);
      for (int64_t e = 0; e < kn.mmaM * kn.mmaN; e += subgroupSize) {
        Value at = kb.add(lane, e);
        Value r = kb.div(at, kn.mmaN), col = kb.rem(at, kn.mmaN);
        Value row = kb.add(rowBase, r), gCol = kb.add(colBase, col);
        Value inside = kb.both(kb.lt(row, kn.m), kb.lt(gCol, kn.n));
        if (e + subgroupSize > kn.mmaM * kn.mmaN)
          inside = kb.both(inside, kb.lt(at, kn.mmaM * kn.mmaN));
        scf::IfOp::create(b, loc, inside, [&](OpBuilder &tb, Location l) {
          Value v = memref::LoadOp::create(tb, l, scratch, ValueRange{subgroup, r, col});
          SmallVector<Value> idx = matrixIndices(kn.c, kn.batch, row, gCol);
          if (!zeroFill)
            v = arith::AddFOp::create(tb, l, memref::LoadOp::create(tb, l, kn.c, idx), v);
          if (epilogue)
            kiln::storeThroughEpilogue(tb, l, epilogue, kn.c, v, idx, /*width=*/0);
          else
            memref::StoreOp::create(tb, l, v, kn.c, idx);
          scf::YieldOp::create(tb, l);
        });
      }
      // Every lane has read the scratch before the next matrix overwrites it.
      gpu::BarrierOp::create(b, loc);
    }
  gpu::TerminatorOp::create(b, loc);
  kiln::eraseReplacedMatmul(op, zeroFill, epilogue);
}

struct KilnSpirvTileMatmulPass
    : kiln::impl::KilnSpirvTileMatmulBase<KilnSpirvTileMatmulPass> {
  using KilnSpirvTileMatmulBase::KilnSpirvTileMatmulBase;
  void runOnOperation() override {
    if (mmaShape.empty())
      return;
    if (mmaShape.size() != 3) {
      getOperation().emitError("kiln-spirv-tile-matmul: mma-shape takes M, N and K, not ")
          << mmaShape.size() << " sizes";
      return signalPassFailure();
    }
    const kiln::VulkanCoopMatmulDevice device{mmaShape[0], mmaShape[1], mmaShape[2],
                                              subgroupSize, maxInvocations, maxWorkgroupBytes};
    if (!Tiling::forDevice(device)) {
      getOperation().emitError("kiln-spirv-tile-matmul: no tiling holds a whole number of the "
                               "cooperative-matrix shape ")
          << kiln::TuneSpace::configText({mmaShape.begin(), mmaShape.end()})
          << " per subgroup tile and K step, with loads that subgroups of "
          << device.subgroupSize << " invocations share evenly, within "
          << device.maxInvocations << " invocations and " << device.maxWorkgroupBytes
          << " bytes of workgroup memory";
      return signalPassFailure();
    }
    SmallVector<linalg::LinalgOp> matmuls;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (fitsCooperativeMatmul(op))
        matmuls.push_back(op);
    });
    for (linalg::LinalgOp op : matmuls) {
      auto c = cast<MemRefType>(op.getDpsInits()[0].getType()).getShape();
      Tiling tiling = *Tiling::forOutput(device, c.size() == 3 ? c[0] : 1, c[c.size() - 2],
                                         c.back());
      if (auto tuned = kiln::tunedMatmulConfig(op, Tiling::tuneSpace())) {
        tiling = Tiling::fromConfig(*tuned);
        // An error, not a fallback: the autotuner skips such a candidate,
        // and the engine compiles again with the defaults, saying so.
        if (!tiling.fits(device)) {
          op->emitError("tuned tiling ")
              << kiln::TuneSpace::configText(*tuned)
              << " does not fit the device's cooperative matrices, subgroups or workgroup limits";
          return signalPassFailure();
        }
      } else {
        kiln::recordUntunedMatmulConfig(op, Tiling::tuneSpace(), tiling.config());
      }
      buildCooperativeMatmul(op, tiling, mmaShape, subgroupSize);
    }
  }
};

} // namespace
