//===- SimtMatmul.cpp - the SIMT matmul kernel both GPU targets build ----===//
//
// Each block owns a tile x tile block of C, each thread perThread x
// perThread of it in registers as 4 x 4 groups spaced tile / (perThread /
// 4) apart (the threads of a warp then read consecutive 16-byte words of
// workgroup memory: no bank conflicts). Per step along K the block stages
// a slice of A (transposed) and of B in one of two workgroup buffers; the
// next step's global loads are issued before the current step's rank-1
// updates and stored after them, so one barrier per step suffices and the
// loads' latency hides behind the math. f16/bf16 inputs are widened to f32
// as they are staged. Every kernel runs an elementwise consumer of C
// (bias, activation) before its stores.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/GPU/SimtMatmul.h"
#include "kiln/Lowering/Common/MatmulEpilogue.h"
#include "kiln/Lowering/Common/Tuned.h"
#include "kiln/Lowering/Common/VectorUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <algorithm>

using namespace mlir;

namespace kiln {
namespace {

static_assert(std::ranges::all_of(GpuSimtMatmulTunables::candidates(),
                                  [](const GpuSimtMatmulTunables &t) { return t.valid(); }));

/// Size `d` of `v`: a constant, or read at run time.
Value sizeOf(OpBuilder &b, Location loc, Value v, int64_t d) {
  return b.createOrFold<memref::DimOp>(loc, v, d);
}

Value ceilDiv(OpBuilder &b, Location loc, Value x, int64_t y) {
  return b.createOrFold<arith::CeilDivSIOp>(loc, x,
                                            arith::ConstantIndexOp::create(b, loc, y));
}

Value lessThan(OpBuilder &b, Location loc, Value x, Value y) {
  return b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, x, y);
}

/// Runs of `width` elements at multiples of `width` along `matrix`'s rows:
/// when they are aligned vectors (an i1) and their alignment. Static
/// strides say it at compile time; a buffer of run-time size (identity
/// layout) has it when its rows are a multiple of `width` long, a check
/// the same in every thread (the kernel specialises on it).
std::pair<Value, IntegerAttr> runAlignment(OpBuilder &b, Location loc, Value matrix,
                                           int64_t width) {
  auto type = cast<MemRefType>(matrix.getType());
  if (IntegerAttr known = alignmentAttr(b, matrix, width))
    return {arith::ConstantIntOp::create(b, loc, 1, 1), known};
  if (!type.getLayout().isIdentity())
    return {arith::ConstantIntOp::create(b, loc, 0, 1), IntegerAttr()};
  int64_t bytes = std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
  int64_t align = std::min<int64_t>(width * bytes, 16);
  Value rowLength = sizeOf(b, loc, matrix, type.getRank() - 1);
  Value rest = b.createOrFold<arith::RemUIOp>(
      loc, rowLength, arith::ConstantIndexOp::create(b, loc, align / bytes));
  return {b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, rest,
                                        arith::ConstantIndexOp::create(b, loc, 0)),
          b.getI64IntegerAttr(align)};
}

/// `count` consecutive elements of row `row` of `matrix` from column `col`
/// (a multiple of `count`) on, as f32; zeros outside its `rows` x `cols`.
/// A run wholly inside and aligned is one vector load.
Value loadRun(OpBuilder &b, Location loc, Value matrix, Value batch, Value row, Value col,
              Value rows, Value cols, int64_t count) {
  IndexBuilder x{b, loc};
  auto f32s = VectorType::get({count}, b.getF32Type());
  Type element = cast<MemRefType>(matrix.getType()).getElementType();
  auto widen = [&](OpBuilder &wb, Value v) -> Value {
    return element.isF32() ? v : arith::ExtFOp::create(wb, loc, f32s, v).getResult();
  };
  Value rowInside = lessThan(b, loc, row, rows);
  // Element by element, zeros outside.
  auto elements = [&](OpBuilder &eb, Location l) -> Value {
    IndexBuilder ex{eb, l};
    Value v = arith::ConstantOp::create(eb, l, f32s, DenseElementsAttr::get(f32s, 0.0f));
    for (int64_t i = 0; i < count; ++i) {
      Value c = ex.add(col, i);
      auto one = scf::IfOp::create(
          eb, l, ex.both(rowInside, lessThan(eb, l, c, cols)),
          [&](OpBuilder &ib, Location il) {
            Value e = memref::LoadOp::create(ib, il, matrix, matrixIndices(matrix, batch, row, c));
            if (!element.isF32())
              e = arith::ExtFOp::create(ib, il, ib.getF32Type(), e);
            scf::YieldOp::create(ib, il, e);
          },
          [&](OpBuilder &zb, Location zl) {
            scf::YieldOp::create(zb, zl, arith::ConstantOp::create(
                                             zb, zl, zb.getF32FloatAttr(0)).getResult());
          });
      v = vector::InsertOp::create(eb, l, one.getResult(0), v, ArrayRef<int64_t>{i});
    }
    return v;
  };
  // A row strided by more than one element (a slice with a step) takes no
  // vector loads.
  if (!unitInnerStride(matrix))
    return elements(b, loc);
  auto [aligned, alignment] = runAlignment(b, loc, matrix, count);
  Value whole = x.both(x.both(rowInside, aligned),
                       b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::ule,
                                                     x.add(col, count), cols));
  auto run = scf::IfOp::create(
      b, loc, whole,
      [&](OpBuilder &tb, Location l) {
        Value v = vector::LoadOp::create(tb, l, VectorType::get({count}, element), matrix,
                                         matrixIndices(matrix, batch, row, col),
                                         /*nontemporal=*/false, alignment);
        scf::YieldOp::create(tb, l, widen(tb, v));
      },
      [&](OpBuilder &eb, Location l) { scf::YieldOp::create(eb, l, elements(eb, l)); });
  return run.getResult(0);
}

/// The parts `t` splits `op`'s K into: none empty where K is static, C's
/// sizes too but its rows (rowsOnlyAtRunTime), C's rows contiguous (the
/// partial sums are added by pairs of columns) and no batched matmul's
/// epilogue to fuse (the adding kernel fuses none); else 1.
int64_t simtSplits(linalg::LinalgOp op, const GpuSimtMatmulTunables &t,
                   const MatmulFusion &fused) {
  auto a = cast<MemRefType>(op.getDpsInputs()[0].getType());
  Value c = op.getDpsInits()[0];
  if (t.splitK <= 1 || a.isDynamicDim(a.getRank() - 1) || !unitInnerStride(c) ||
      (!cast<MemRefType>(c.getType()).hasStaticShape() && !rowsOnlyAtRunTime(op)) ||
      (isa<linalg::BatchMatmulOp>(op) && fused.epilogue))
    return 1;
  return partsOfSteps(llvm::divideCeil(a.getShape().back(), t.step), t.splitK);
}

/// Builds the SIMT kernel of `op` before it, launched where `launchIf`
/// holds (gridWhere). Split K: each block sums its part of K into a
/// buffer of partial sums ([batch * splits + part] x M x N rounded up to
/// 4), which sumPartialsKernel adds into C through the epilogue.
LogicalResult buildSimtMatmul(linalg::LinalgOp op, const GpuSimtMatmulTunables &t,
                              const MatmulFusion &fused, Value launchIf,
                              WorkgroupVectors vectors) {
  if (!t.valid())
    return op->emitError("SIMT matmul tiling ")
           << t.tile << "x" << t.step << "x" << t.perThread << "x" << t.splitK
           << " is not one the kernel takes";
  const int64_t tile = t.tile, step = t.step, perLoad = t.perLoad();
  const int64_t splits = simtSplits(op, t, fused);
  const int64_t side = tile / t.perThread;   // threads along each side of the tile
  const int64_t groups = t.perThread / 4;    // 4 x 4 groups per thread along each side
  const int64_t span = tile / groups;        // distance between a thread's groups
  Value a = op.getDpsInputs()[0], bm = op.getDpsInputs()[1], cm = op.getDpsInits()[0];
  bool batched = isa<linalg::BatchMatmulOp>(op);
  const int64_t cRank = cast<MemRefType>(cm.getType()).getRank();
  const int64_t aRank = cast<MemRefType>(a.getType()).getRank();

  // A bias or activation after the matmul runs before the store; a zero
  // fill before it is folded into the stores (split K: into the adding
  // kernel's).
  linalg::GenericOp epilogue = splits > 1 ? linalg::GenericOp() : fused.epilogue;
  const bool overwrite = splits > 1 || fused.zeroFill;
  OpBuilder b(op);
  Location loc = op.getLoc();
  IndexBuilder ib{b, loc};
  Value partials = splits > 1 ? allocPartials(b, loc, cm, splits, 4, launchIf) : Value();
  // Where the kernel's sums go: C, or the block's part of the partial sums.
  Value out = partials ? partials : cm;
  auto workgroup = gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  auto stageType = MemRefType::get({2, step, tile}, b.getF32Type(), AffineMap(), workgroup);
  Value gridX =
      gridWhere(b, loc, launchIf, ceilDiv(b, loc, sizeOf(b, loc, cm, cRank - 1), tile));
  Value gridY = ceilDiv(b, loc, sizeOf(b, loc, cm, cRank - 2), tile);
  Value gridZ = b.createOrFold<arith::MulIOp>(loc, batched ? sizeOf(b, loc, cm, 0) : ib.c(1),
                                              ib.c(splits));
  auto launch = gpu::LaunchOp::create(
      b, loc, gridX, gridY, gridZ, ib.c(t.threads()), ib.c(1),
      ib.c(1), /*dynamicSharedMemorySize=*/nullptr, /*asyncTokenType=*/nullptr,
      /*asyncDependencies=*/{}, /*workgroupAttributions=*/TypeRange{stageType, stageType});
  Value aStage = launch.getWorkgroupAttributions()[0];
  Value bStage = launch.getWorkgroupAttributions()[1];

  b.setInsertionPointToStart(&launch.getBody().front());
  IndexBuilder kb{b, loc};
  Value m = sizeOf(b, loc, cm, cRank - 2), n = sizeOf(b, loc, cm, cRank - 1);
  gpu::KernelDim3 block = launch.getBlockIds();
  Value tid = launch.getThreadIds().x;
  Value batchIndex = !batched ? Value() : splits > 1 ? kb.div(block.z, splits) : block.z;
  // The block's part of K: [kBegin, k).
  Value kBegin = kb.c(0), k = sizeOf(b, loc, a, aRank - 1);
  if (splits > 1) {
    int64_t allSteps = llvm::divideCeil(*getConstantIntValue(k), step);
    int64_t partK = llvm::divideCeil(allSteps, splits) * step;
    kBegin = kb.mul(kb.rem(block.z, splits), partK);
    k = b.createOrFold<arith::MinSIOp>(loc, kb.add(kBegin, partK), k);
  }
  // The sums' first index in `out`: the batch, or the batch's part.
  Value outBatch = partials ? block.z : batchIndex;
  Value row0 = kb.mul(block.y, tile), col0 = kb.mul(block.x, tile);
  Value tx = kb.rem(tid, side), ty = kb.div(tid, side);
  // Staging: each thread a run of perLoad k of one row of A and a run of
  // perLoad columns of one k of B.
  Value aRow = kb.div(tid, step / perLoad), aK = kb.mul(kb.rem(tid, step / perLoad), perLoad);
  Value bK = kb.div(tid, tile / perLoad), bCol = kb.mul(kb.rem(tid, tile / perLoad), perLoad);

  // Run accesses of a stage: vector ones, or lane by lane.
  auto storeStage = [&](OpBuilder &sb, Value v, Value stage, SmallVector<Value> at) {
    if (vectors == WorkgroupVectors::Native) {
      vector::StoreOp::create(sb, loc, v, stage, at);
      return;
    }
    IndexBuilder x{sb, loc};
    Value col = at.back();
    for (int64_t i = 0, e = cast<VectorType>(v.getType()).getNumElements(); i < e; ++i) {
      at.back() = x.add(col, i);
      memref::StoreOp::create(sb, loc, vector::ExtractOp::create(sb, loc, v, ArrayRef<int64_t>{i}),
                              stage, at);
    }
  };
  auto vec4 = VectorType::get({4}, b.getF32Type());
  auto loadStage = [&](OpBuilder &lb, Value stage, SmallVector<Value> at) -> Value {
    if (vectors == WorkgroupVectors::Native)
      return vector::LoadOp::create(lb, loc, vec4, stage, at);
    IndexBuilder x{lb, loc};
    Value col = at.back();
    SmallVector<Value> lanes;
    for (int64_t i = 0; i < 4; ++i) {
      at.back() = x.add(col, i);
      lanes.push_back(memref::LoadOp::create(lb, loc, stage, at));
    }
    return vector::FromElementsOp::create(lb, loc, vec4, lanes);
  };

  // The runs of the step starting at k0 (zeros past K), `runWidth` elements
  // each (SPIR-V has no vectors of 8), and their stores into buffer
  // `buffer`.
  const int64_t runWidth =
      vectors == WorkgroupVectors::Native ? perLoad : std::min<int64_t>(perLoad, 4);
  using Runs = std::pair<SmallVector<Value>, SmallVector<Value>>;
  auto load = [&](OpBuilder &lb, Value k0) -> Runs {
    IndexBuilder x{lb, loc};
    Runs runs;
    for (int64_t r = 0; r < perLoad; r += runWidth) {
      runs.first.push_back(loadRun(lb, loc, a, batchIndex, x.add(row0, aRow),
                                   x.add(k0, r ? x.add(aK, r) : aK), m, k, runWidth));
      runs.second.push_back(loadRun(lb, loc, bm, batchIndex, x.add(k0, bK),
                                    x.add(col0, r ? x.add(bCol, r) : bCol), k, n, runWidth));
    }
    return runs;
  };
  auto stage = [&](OpBuilder &sb, Value buffer, const Runs &runs) {
    IndexBuilder x{sb, loc};
    for (int64_t i = 0; i < perLoad; ++i) {
      Value v = vector::ExtractOp::create(sb, loc, runs.first[i / runWidth],
                                          ArrayRef<int64_t>{i % runWidth});
      memref::StoreOp::create(sb, loc, v, aStage, ValueRange{buffer, x.add(aK, i), aRow});
    }
    for (int64_t r = 0; r < perLoad; r += runWidth)
      storeStage(sb, runs.second[r / runWidth], bStage,
                 {buffer, bK, r ? x.add(bCol, r) : bCol});
  };

  Value zero = arith::ConstantOp::create(b, loc, vec4, DenseElementsAttr::get(vec4, 0.0f));
  // Accumulator (gi * 4 + i) * groups + gj: row gi * span + ty * 4 + i,
  // columns gj * span + tx * 4 .. + 4 of the tile.
  SmallVector<Value> init(t.perThread * groups, zero);
  stage(b, kb.c(0), load(b, kBegin));
  gpu::BarrierOp::create(b, loc);
  Value steps = ceilDiv(b, loc, b.createOrFold<arith::SubIOp>(loc, k, kBegin), step);
  auto loop = scf::ForOp::create(
      b, loc, kb.c(0), steps, kb.c(1), init,
      [&](OpBuilder &lb, Location l, Value s, ValueRange acc) {
        IndexBuilder x{lb, l};
        Value current = x.rem(s, 2), next = x.rem(x.add(s, 1), 2);
        Runs ahead = load(lb, x.add(kBegin, x.mul(x.add(s, 1), step)));
        SmallVector<Value> sums(acc.begin(), acc.end());
        for (int64_t kk = 0; kk < step; ++kk) {
          SmallVector<Value> aVec, bVec;
          for (int64_t g = 0; g < groups; ++g) {
            aVec.push_back(
                loadStage(lb, aStage, {current, x.c(kk), x.add(x.mul(ty, 4), g * span)}));
            bVec.push_back(
                loadStage(lb, bStage, {current, x.c(kk), x.add(x.mul(tx, 4), g * span)}));
          }
          for (int64_t gi = 0; gi < groups; ++gi)
            for (int64_t i = 0; i < 4; ++i) {
              Value ai = vector::ExtractOp::create(lb, l, aVec[gi], ArrayRef<int64_t>{i});
              Value splat = vector::BroadcastOp::create(lb, l, vec4, ai);
              for (int64_t gj = 0; gj < groups; ++gj) {
                Value &sum = sums[(gi * 4 + i) * groups + gj];
                sum = vector::FMAOp::create(lb, l, splat, bVec[gj], sum);
              }
            }
        }
        stage(lb, next, ahead);
        gpu::BarrierOp::create(lb, l);
        scf::YieldOp::create(lb, l, sums);
      });

  // C (+)= the thread's outputs inside the matrix: four columns at a time
  // where all four are inside (and aligned), else one by one.
  auto [cAligned, cAlignment] = runAlignment(b, loc, out, 4);
  auto storeAt = [&](OpBuilder &sb, Location l, Value sum, Value row, Value col, int64_t width) {
    SmallVector<Value> idx = matrixIndices(out, outBatch, row, col);
    if (!overwrite) {
      Value old = width ? Value(vector::LoadOp::create(sb, l, vec4, out, idx))
                        : Value(memref::LoadOp::create(sb, l, out, idx));
      sum = arith::AddFOp::create(sb, l, old, sum);
    }
    if (epilogue)
      storeThroughEpilogue(sb, l, epilogue, out, sum, idx, width);
    else if (width)
      vector::StoreOp::create(sb, l, sum, out, idx, /*nontemporal=*/false, cAlignment);
    else
      memref::StoreOp::create(sb, l, sum, out, idx);
  };
  for (int64_t gi = 0; gi < groups; ++gi)
    for (int64_t i = 0; i < 4; ++i) {
      Value row = kb.add(row0, kb.add(kb.mul(ty, 4), gi * span + i));
      for (int64_t gj = 0; gj < groups; ++gj) {
        Value col = kb.add(col0, kb.add(kb.mul(tx, 4), gj * span));
        Value sum = loop.getResult((gi * 4 + i) * groups + gj);
        Value rowInside = lessThan(b, loc, row, m);
        auto oneByOne = [&](OpBuilder &eb, Location l) {
          IndexBuilder ex{eb, l};
          for (int64_t j = 0; j < 4; ++j) {
            Value c = ex.add(col, j);
            scf::IfOp::create(eb, l, ex.both(rowInside, lessThan(eb, l, c, n)),
                              [&](OpBuilder &sb, Location sl) {
                                Value v = vector::ExtractOp::create(sb, sl, sum,
                                                                    ArrayRef<int64_t>{j});
                                storeAt(sb, sl, v, row, c, 0);
                                scf::YieldOp::create(sb, sl);
                              });
          }
        };
        // Rows strided by more than one element take no vector stores.
        if (!unitInnerStride(out)) {
          oneByOne(b, loc);
          continue;
        }
        Value whole = kb.both(kb.both(rowInside, cAligned),
                              b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::ule,
                                                            kb.add(col, 4), n));
        scf::IfOp::create(
            b, loc, whole,
            [&](OpBuilder &tb, Location l) {
              storeAt(tb, l, sum, row, col, 4);
              scf::YieldOp::create(tb, l);
            },
            [&](OpBuilder &eb, Location l) {
              oneByOne(eb, l);
              scf::YieldOp::create(eb, l);
            });
      }
    }
  gpu::TerminatorOp::create(b, loc);
  if (partials) {
    b.setInsertionPointAfter(launch);
    const int64_t n = cast<MemRefType>(cm.getType()).getShape().back();
    sumPartialsKernel(b, loc, partials, splits, cm, /*evenRows=*/n % 2 == 0, fused, launchIf);
  }
  return success();
}

/// `tiling`, or where it is beyond `target`'s limits the first candidate
/// within them (K unsplit where `tiling` is).
GpuSimtMatmulTunables withinLimits(GpuSimtMatmulTunables tiling, const SimtMatmulTarget &target) {
  auto fits = [&](const GpuSimtMatmulTunables &t) {
    return t.workgroupBytes() <= target.maxWorkgroupBytes &&
           t.threads() <= target.maxInvocations;
  };
  if (fits(tiling))
    return tiling;
  for (const GpuSimtMatmulTunables &c : GpuSimtMatmulTunables::candidates())
    if (fits(c) && (tiling.splitK > 1 || c.splitK == 1))
      return c;
  return tiling; // no candidate fits: the device's limits are below Vulkan's minimums
}

/// The tuned tiling of a static-sized `op`, else the untuned one (recorded
/// for the tuner).
FailureOr<GpuSimtMatmulTunables> simtTiling(linalg::LinalgOp op,
                                            const SimtMatmulTarget &target) {
  auto c = cast<MemRefType>(op.getDpsInits()[0].getType()).getShape();
  if (auto tuned = tunedMatmulConfig(op, GpuSimtMatmulTunables::tuneSpace())) {
    auto tiling = GpuSimtMatmulTunables::fromConfig(*tuned);
    if (withinLimits(tiling, target) != tiling)
      return op->emitError("tuned tiling ")
             << TuneSpace::configText(*tuned) << " does not fit the device's workgroup limits ("
             << tiling.workgroupBytes() << " bytes of workgroup memory and " << tiling.threads()
             << " invocations; the device allows " << target.maxWorkgroupBytes << " and "
             << target.maxInvocations << ")";
    return tiling;
  }
  auto a = cast<MemRefType>(op.getDpsInputs()[0].getType()).getShape();
  const bool defaultFits = withinLimits({}, target) == GpuSimtMatmulTunables{};
  auto untuned = withinLimits(GpuSimtMatmulTunables::forOutput(c.size() == 3 ? c[0] : 1,
                                                               c[c.size() - 2], c.back(),
                                                               a.back(), target.fillBlocks,
                                                               defaultFits),
                              target);
  recordUntunedMatmulConfig(op, GpuSimtMatmulTunables::tuneSpace(), untuned.config());
  return untuned;
}

} // namespace

bool fitsSimtMatmul(linalg::LinalgOp op) {
  if (!isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op) || !op.hasPureBufferSemantics())
    return false;
  if (!readsOperandsInPlace(op))
    return false;
  auto bufferOf = [](Value v, auto isElement) {
    auto type = dyn_cast<MemRefType>(v.getType());
    return type && isElement(type.getElementType());
  };
  auto floatInput = [](Type t) { return t.isF32() || t.isF16() || t.isBF16(); };
  return bufferOf(op.getDpsInputs()[0], floatInput) &&
         bufferOf(op.getDpsInputs()[1], floatInput) &&
         bufferOf(op.getDpsInits()[0], [](Type t) { return t.isF32(); });
}

LogicalResult buildSimtMatmuls(linalg::LinalgOp op, const MatmulFusion &fused, Value unmet,
                               const SimtMatmulTarget &target) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  IndexBuilder x{b, loc};
  auto gateWith = [&](Value more) -> Value {
    Value count = unmet ? b.createOrFold<arith::AddIOp>(loc, unmet, more) : more;
    return b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, count, x.c(0));
  };
  bool sized = llvm::all_of(op->getOperands(), [](Value v) {
    return cast<MemRefType>(v.getType()).hasStaticShape();
  });
  const WorkgroupVectors vectors = target.workgroupVectors;
  if (sized) { // then nothing else is compiled beside it
    FailureOr<GpuSimtMatmulTunables> tiling = simtTiling(op, target);
    return failed(tiling) ? failure() : buildSimtMatmul(op, *tiling, fused, Value(), vectors);
  }
  const int64_t fillBlocks = target.fillBlocks;
  if (fillBlocks <= 0) // never narrowed
    return buildSimtMatmul(op, withinLimits({}, target), fused,
                           unmet ? gateWith(x.c(0)) : Value(), vectors);
  Value c = op.getDpsInits()[0];
  auto cShape = cast<MemRefType>(c.getType()).getShape();
  int64_t rank = cShape.size();
  GpuSimtMatmulTunables wide = withinLimits({}, target),
                        narrow = withinLimits(GpuSimtMatmulTunables::narrow(), target);
  // Rows alone known at run time (a decode step's tokens): up to a few
  // hundred rows, the tiling and parts of K static rows would take, bucket
  // by bucket; the run-time-size tilings above the last bucket.
  int64_t bucketRows = 0;
  if (rowsOnlyAtRunTime(op)) {
    const int64_t batch = rank == 3 ? cShape[0] : 1, n = cShape.back(),
                  k = cast<MemRefType>(op.getDpsInputs()[0].getType()).getShape().back();
    const bool defaultFits = wide == GpuSimtMatmulTunables{};
    auto chosen = [&](int64_t rows) {
      return withinLimits(
          GpuSimtMatmulTunables::forOutput(batch, rows, n, k, fillBlocks, defaultFits), target);
    };
    auto runTime = [&](int64_t rows) {
      int64_t blocks = batch * llvm::divideCeil(rows, wide.tile) * llvm::divideCeil(n, wide.tile);
      return blocks >= fillBlocks ? wide : narrow;
    };
    Value m = b.createOrFold<memref::DimOp>(loc, c, rank - 2);
    // 0 where the rows are in (low, high], else 1 (a requirement unmet).
    auto outside = [&](int64_t low, int64_t high) {
      return b.createOrFold<arith::SelectOp>(loc, rowsWithin(b, loc, m, low, high), x.c(0),
                                             x.c(1));
    };
    for (const RowBucket<GpuSimtMatmulTunables> &bucket : rowBuckets<GpuSimtMatmulTunables>(
             GpuSimtMatmulTunables::kRowBuckets, chosen, runTime)) {
      if (failed(buildSimtMatmul(op, bucket.tiling, fused,
                                 gateWith(outside(bucketRows, bucket.maxRows)), vectors)))
        return failure();
      bucketRows = bucket.maxRows;
    }
    // The run-time tilings below (gateWith reads `unmet`) take the rows
    // above the last bucket.
    if (bucketRows > 0)
      unmet = unmet ? b.createOrFold<arith::AddIOp>(loc, unmet, outside(bucketRows, -1))
                    : outside(bucketRows, -1);
  }
  Value blocks = x.c(1);
  for (int64_t d = 0; d < rank; ++d) {
    Value size = b.createOrFold<memref::DimOp>(loc, c, d);
    if (d >= rank - 2)
      size = ceilDiv(b, loc, size, wide.tile);
    blocks = b.createOrFold<arith::MulIOp>(loc, blocks, size);
  }
  auto flag = [&](arith::CmpIPredicate p) {
    Value holds = b.createOrFold<arith::CmpIOp>(loc, p, blocks, x.c(fillBlocks));
    return b.createOrFold<arith::SelectOp>(loc, holds, x.c(1), x.c(0));
  };
  Value few = flag(arith::CmpIPredicate::slt), many = flag(arith::CmpIPredicate::sge);
  for (auto [tiling, gate] : {std::pair{wide, gateWith(few)}, std::pair{narrow, gateWith(many)}}) {
    std::optional<int64_t> known = getConstantIntValue(gate);
    if (known && !*known)
      continue;
    if (failed(buildSimtMatmul(op, tiling, fused, known ? Value() : gate, vectors)))
      return failure();
  }
  return success();
}

} // namespace kiln
