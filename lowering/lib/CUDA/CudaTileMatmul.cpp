//===- CudaTileMatmul.cpp - the kiln-cuda-tile-matmul pass -----------------===//
//
// f16/bf16 (and f8: CudaFloat8Operands.cpp) matmuls take the Hopper kernel
// (CudaWgmmaMatmul.cpp; split-K: CudaWgmmaSplitK.cpp; a K of no whole
// 16-byte units through padded copies: CudaMatrixCopies.cpp) on sm_90a, the
// tensor-core kernel (CudaMmaMatmul.cpp) elsewhere where the target has one
// and the shapes fit, both for static shapes (wgmma for run-time ones too);
// the others
// the classic SIMT GEMM (f16/bf16 inputs widened to f32 as they are
// staged), static or of run-time size: each block owns a tile x tile block
// of C, each thread perThread x perThread of it in registers as 4 x 4
// groups spaced tile / (perThread / 4) apart (the threads of a warp then
// read consecutive 16-byte words of workgroup memory: no bank conflicts).
// Per step along K the block stages a slice of A (transposed) and of B in
// one of two workgroup buffers; the next step's global loads are issued
// before the current step's rank-1 updates and stored after them, so one
// barrier per step suffices and the loads' latency hides behind the math.
// Every kernel runs an elementwise consumer of C (bias, activation) before
// its stores.
//
//===----------------------------------------------------------------------===//
#include "CudaMatmul.h"
#include "kiln/Lowering/CUDA/Passes.h"
#include "kiln/Lowering/Common/MatmulEpilogue.h"
#include "kiln/Lowering/Common/Tuned.h"
#include "kiln/Lowering/Common/VectorUtils.h"

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
using kiln::matrixIndices;

namespace {

static_assert(std::ranges::all_of(kiln::CudaSimtMatmulTunables::candidates(),
                                  [](const kiln::CudaSimtMatmulTunables &t) { return t.valid(); }));

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
  if (IntegerAttr known = kiln::alignmentAttr(b, matrix, width))
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
  if (!kiln::unitInnerStride(matrix))
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
/// rows contiguous (the partial sums are added by pairs of columns) and no
/// batched matmul's epilogue to fuse (the adding kernel fuses none); else 1.
int64_t simtSplits(linalg::LinalgOp op, const kiln::CudaSimtMatmulTunables &t,
                   const kiln::MatmulFusion &fused) {
  auto a = cast<MemRefType>(op.getDpsInputs()[0].getType());
  Value c = op.getDpsInits()[0];
  if (t.splitK <= 1 || a.isDynamicDim(a.getRank() - 1) || !kiln::unitInnerStride(c) ||
      (isa<linalg::BatchMatmulOp>(op) && fused.epilogue))
    return 1;
  return kiln::partsOfSteps(llvm::divideCeil(a.getShape().back(), t.step), t.splitK);
}

/// Builds the SIMT kernel of `op` before it, launched where `launchIf`
/// holds (kiln::gridWhere). Split K: each block sums its part of K into a
/// buffer of partial sums ([batch * splits + part] x M x N rounded up to
/// 4), which sumPartialsKernel adds into C through the epilogue.
LogicalResult buildSimtMatmul(linalg::LinalgOp op, const kiln::CudaSimtMatmulTunables &t,
                              const kiln::MatmulFusion &fused, Value launchIf) {
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
  Value partials;
  if (splits > 1) {
    auto cShape = cast<MemRefType>(cm.getType()).getShape();
    partials = memref::AllocOp::create(
        b, loc,
        MemRefType::get({(batched ? cShape[0] : 1) * splits, cShape[cRank - 2],
                         static_cast<int64_t>(llvm::alignTo(cShape.back(), 4))},
                        b.getF32Type()));
  }
  // Where the kernel's sums go: C, or the block's part of the partial sums.
  Value out = partials ? partials : cm;
  auto workgroup = gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  auto stageType = MemRefType::get({2, step, tile}, b.getF32Type(), AffineMap(), workgroup);
  Value gridX =
      kiln::gridWhere(b, loc, launchIf, ceilDiv(b, loc, sizeOf(b, loc, cm, cRank - 1), tile));
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

  // The runs of the step starting at k0 (zeros past K), and their stores
  // into buffer `buffer`.
  auto load = [&](OpBuilder &lb, Value k0) -> std::pair<Value, Value> {
    IndexBuilder x{lb, loc};
    return {loadRun(lb, loc, a, batchIndex, x.add(row0, aRow), x.add(k0, aK), m, k, perLoad),
            loadRun(lb, loc, bm, batchIndex, x.add(k0, bK), x.add(col0, bCol), k, n, perLoad)};
  };
  auto stage = [&](OpBuilder &sb, Value buffer, std::pair<Value, Value> runs) {
    IndexBuilder x{sb, loc};
    for (int64_t i = 0; i < perLoad; ++i) {
      Value v = vector::ExtractOp::create(sb, loc, runs.first, ArrayRef<int64_t>{i});
      memref::StoreOp::create(sb, loc, v, aStage, ValueRange{buffer, x.add(aK, i), aRow});
    }
    vector::StoreOp::create(sb, loc, runs.second, bStage, ValueRange{buffer, bK, bCol});
  };

  auto vec4 = VectorType::get({4}, b.getF32Type());
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
        std::pair<Value, Value> ahead = load(lb, x.add(kBegin, x.mul(x.add(s, 1), step)));
        SmallVector<Value> sums(acc.begin(), acc.end());
        for (int64_t kk = 0; kk < step; ++kk) {
          SmallVector<Value> aVec, bVec;
          for (int64_t g = 0; g < groups; ++g) {
            aVec.push_back(vector::LoadOp::create(
                lb, l, vec4, aStage, ValueRange{current, x.c(kk), x.add(x.mul(ty, 4), g * span)}));
            bVec.push_back(vector::LoadOp::create(
                lb, l, vec4, bStage, ValueRange{current, x.c(kk), x.add(x.mul(tx, 4), g * span)}));
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
      kiln::storeThroughEpilogue(sb, l, epilogue, out, sum, idx, width);
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
        if (!kiln::unitInnerStride(out)) {
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
    kiln::sumPartialsKernel(b, loc, partials, splits, cm, /*evenRows=*/n % 2 == 0, fused,
                            launchIf);
  }
  return success();
}

/// f32, f16 or bf16 inputs accumulating into f32.
bool isTileableMatmul(linalg::LinalgOp op) {
  if (!isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op) || !op.hasPureBufferSemantics())
    return false;
  if (!kiln::readsOperandsInPlace(op))
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
      if (isTileableMatmul(op))
        matmuls.push_back(op);
    });
    for (linalg::LinalgOp op : matmuls)
      if (failed(replace(op)))
        return signalPassFailure();
  }

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
    if (failed(buildSimtMatmuls(op, sized, fused, Value())))
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
    if ((!known || *known == 0) &&
        failed(kiln::buildWgmmaMatmul(op, tiling, maxSharedBytes, fillBlocks, fused, fits,
                                      operands)))
      return failure();
    // The SIMT kernels' one unmet requirement where the wgmma kernel fits.
    Value wgmmaFits = known ? Value() : arith::SelectOp::create(b, loc, fits, x.c(1), x.c(0));
    if ((!known || *known != 0) && failed(buildSimtMatmuls(op, sized, fused, wgmmaFits)))
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

  /// The SIMT kernel of `op`, launched only where `unmet` (a host index
  /// counting unmet requirements; null: none) is 0. Static sizes take the
  /// tuned or the untuned tiling (tune keys name static sizes); run-time
  /// ones two tilings, unsplit, each launched where it suits the run's
  /// sizes (narrow tiles where the default would not fill the GPU: a
  /// decode step's few rows).
  LogicalResult buildSimtMatmuls(linalg::LinalgOp op, bool sized, const kiln::MatmulFusion &fused,
                                 Value unmet) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    IndexBuilder x{b, loc};
    auto gateWith = [&](Value more) -> Value {
      Value count = unmet ? b.createOrFold<arith::AddIOp>(loc, unmet, more) : more;
      return b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, count, x.c(0));
    };
    if (sized) // then nothing else is compiled beside it
      return buildSimtMatmul(op, simtTiling(op), fused, Value());
    if (fillBlocks <= 0) // never narrowed
      return buildSimtMatmul(op, {}, fused, unmet ? gateWith(x.c(0)) : Value());
    Value c = op.getDpsInits()[0];
    int64_t rank = cast<MemRefType>(c.getType()).getRank();
    kiln::CudaSimtMatmulTunables wide, narrow = kiln::CudaSimtMatmulTunables::narrow();
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
      if (failed(buildSimtMatmul(op, tiling, fused, known ? Value() : gate)))
        return failure();
    }
    return success();
  }

  kiln::CudaSimtMatmulTunables simtTiling(linalg::LinalgOp op) {
    auto c = cast<MemRefType>(op.getDpsInits()[0].getType()).getShape();
    if (auto tuned = kiln::tunedMatmulConfig(op, kiln::CudaSimtMatmulTunables::tuneSpace()))
      return kiln::CudaSimtMatmulTunables::fromConfig(*tuned);
    auto a = cast<MemRefType>(op.getDpsInputs()[0].getType()).getShape();
    auto untuned = kiln::CudaSimtMatmulTunables::forOutput(c.size() == 3 ? c[0] : 1,
                                                           c[c.size() - 2], c.back(), a.back(),
                                                           fillBlocks);
    kiln::recordUntunedMatmulConfig(op, kiln::CudaSimtMatmulTunables::tuneSpace(),
                                    untuned.config());
    return untuned;
  }
};

} // namespace
