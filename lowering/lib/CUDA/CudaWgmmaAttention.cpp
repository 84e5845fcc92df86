//===- CudaWgmmaAttention.cpp - the kiln-cuda-wgmma-attention pass ---------===//
//
// kiln_kernel.attention of f16/bf16 with head dims 64 or 128 on sm_90a as
// a FlashAttention kernel on warpgroup MMA fed by TMA. A block of three
// warpgroups owns 128 query rows of one batch entry: warpgroup 0 is the
// producer, whose one thread copies Q once and then K and V in tiles of
// 128 keys (TMA, 128-byte swizzle, `stages` shared-memory buffers, each
// with a `full` and an `empty` mbarrier as in the wgmma matmul);
// warpgroups 1 and 2 are the consumers, 64 rows each. Per key tile a
// consumer computes S = Q K^T (wgmma, both operands K-major from shared
// memory: Q's rows and K's rows run along the head dim), waits for it,
// runs the online softmax on the accumulator (an m64nN accumulator is m16n8
// C fragments side by side, as mma.sync's: CudaAttention.h), rescales O and
// issues O += P V with P from registers (a C fragment pair is an A
// fragment: no shared memory; wgmma with A in registers is PTX the NVVM
// dialect does not have, so inline asm) and V N-major (transposed by
// wgmma), which stays in flight into the next tile: waiting for that
// tile's S waits for it too, and then the stage goes back to the
// producer. The two consumers run apart, one's softmax under the other's
// MMAs. (FlashAttention-3's further overlap, the next S issued with the
// last P V and the consumers taking turns on named barriers, measured
// slower here: docs/cuda.md.) Causal blocks stop at the tile of their last
// row and run longest first. At the end O / sum, rounded, stored. Batch
// and sequence lengths may be run-time sizes: TMA takes no empty dim, so
// the kernel then launches only where there are keys, and a kernel writing
// zeros (no keys: an empty sum) where there are none.
//
//===----------------------------------------------------------------------===//
#include "CudaAttention.h"
#include "CudaMatmul.h"
#include "CudaWgmma.h"
#include "kiln/Lowering/CUDA/Passes.h"
#include "kiln/Lowering/Common/MatmulKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace kiln {
#define GEN_PASS_DEF_KILNCUDAWGMMAATTENTION
#include "kiln/Lowering/CUDA/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

constexpr int64_t kRows = 128, kWarpgroupRows = 64, kKeys = 128;
constexpr int64_t kThreads = 3 * kWarpgroupThreads; // producer + two consumers
constexpr int64_t kConsumerWarps = 8;
constexpr int64_t kStages = 2;
constexpr int64_t kColumns = kSwizzleBytes / 2; // 16-bit elements of a swizzled row (a box's width)
constexpr int64_t kAlign = 1024;                // where the swizzle pattern starts
// Registers per thread after setmaxnreg: 128 x 24 + 256 x 240 <= 64 Ki.
constexpr uint32_t kProducerRegisters = 24, kConsumerRegisters = 240;

/// O (64 x n accumulators, an LLVM struct) += A (this warp's 16 x 16 of P
/// in `aRegs`, four i32) * B (16 x n, N-major at descriptor `bDescriptor`,
/// transposed by wgmma): wgmma with A in registers, as inline PTX.
Value wgmmaWithRegisterA(OpBuilder &b, Location loc, Value acc, ValueRange aRegs,
                         Value bDescriptor, int64_t n, Type element) {
  const int64_t count = n / 2; // accumulators per thread
  std::string ptx, constraints;
  llvm::raw_string_ostream text(ptx), kinds(constraints);
  // $0.. the accumulators (tied to the inputs after them), then A's four
  // registers, B's descriptor and scale-d (1: add to D).
  text << "{\n.reg .pred p;\nsetp.ne.b32 p, $" << 2 * count + 5 << ", 0;\n"
       << "wgmma.mma_async.sync.aligned.m64n" << n << "k16.f32."
       << (element.isF16() ? "f16.f16" : "bf16.bf16") << " {";
  SmallVector<Value> operands;
  for (int64_t i = 0; i < count; ++i) {
    text << (i ? ", $" : "$") << i;
    kinds << "=f,";
  }
  for (int64_t i = 0; i < count; ++i) {
    kinds << i << ",";
    operands.push_back(LLVM::ExtractValueOp::create(b, loc, acc, i));
  }
  text << "}, {";
  for (int64_t i = 0; i < 4; ++i) {
    text << (i ? ", $" : "$") << 2 * count + i;
    kinds << "r,";
  }
  operands.append(aRegs.begin(), aRegs.end());
  // scale-d, scale-a, scale-b, trans-b (B is N-major).
  text << "}, $" << 2 * count + 4 << ", p, 1, 1, 1;\n}\n";
  kinds << "l,n";
  operands.push_back(bDescriptor);
  operands.push_back(i32(b, loc, 1));
  return LLVM::InlineAsmOp::create(b, loc, acc.getType(), operands, ptx, constraints,
                                   /*has_side_effects=*/true, /*is_align_stack=*/false,
                                   LLVM::TailCallKind::None,
                                   LLVM::AsmDialectAttr::get(b.getContext(),
                                                             LLVM::AsmDialect::AD_ATT),
                                   /*operand_attrs=*/ArrayAttr())
      .getResult(0);
}

/// Zeros into `out` ([B, Lq, Ev]) where `launchIf` holds: a thread per
/// element.
void zeroOutput(OpBuilder &b, Location loc, Value out, Value launchIf) {
  constexpr int64_t kFillThreads = 256;
  IndexBuilder ib{b, loc};
  auto type = cast<MemRefType>(out.getType());
  Value rows = sizeValue(b, loc, out, 1), width = ib.c(type.getDimSize(2));
  Value perEntry = b.createOrFold<arith::MulIOp>(loc, rows, width);
  Value total = b.createOrFold<arith::MulIOp>(loc, sizeValue(b, loc, out, 0), perEntry);
  Value blocks = b.createOrFold<arith::CeilDivSIOp>(loc, total, ib.c(kFillThreads));
  auto launch = gpu::LaunchOp::create(b, loc, gridWhere(b, loc, launchIf, blocks), ib.c(1),
                                      ib.c(1), ib.c(kFillThreads), ib.c(1), ib.c(1));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&launch.getBody().front());
  IndexBuilder x{b, loc};
  Value i = x.add(x.mul(launch.getBlockIds().x, kFillThreads), launch.getThreadIds().x);
  scf::IfOp::create(b, loc, x.lt(i, total), [&](OpBuilder &tb, Location l) {
    IndexBuilder y{tb, l};
    Value zero = arith::ConstantOp::create(tb, l, tb.getZeroAttr(type.getElementType()));
    Value entry = y.div(i, perEntry), inEntry = arith::RemUIOp::create(tb, l, i, perEntry);
    Value row = y.div(inEntry, width), col = arith::RemUIOp::create(tb, l, inEntry, width);
    memref::StoreOp::create(tb, l, zero, out, ValueRange{entry, row, col});
    scf::YieldOp::create(tb, l);
  });
  gpu::TerminatorOp::create(b, loc);
}

LogicalResult buildWgmmaAttention(kernel::AttentionOp op, int64_t maxSharedBytes) {
  Value q = op.getQ(), k = op.getK(), v = op.getV();
  Type element = cast<MemRefType>(q.getType()).getElementType();
  const NVVM::WGMMATypes type = wgmmaTypeOf(element);
  const int64_t depth = dimOf(q, 2), width = dimOf(v, 2);
  // Q, then the stages of K and of V: blocks of 64 head-dim columns (one
  // swizzled box each) of every row; then the mbarriers.
  const int64_t qBytes = kRows * depth * 2, kStageBytes = kKeys * depth * 2,
                vStageBytes = kKeys * width * 2;
  const int64_t sharedBytes =
      kAlign + qBytes + kStages * (kStageBytes + vStageBytes) + 8 * (1 + 2 * kStages);
  if (sharedBytes > maxSharedBytes)
    return op->emitError("fused attention needs ")
           << sharedBytes << " bytes of shared memory; at most " << maxSharedBytes;

  OpBuilder b(op);
  Location loc = op.getLoc();
  IndexBuilder ib{b, loc};
  auto [batch, rows, keys, rowTiles, keyTiles, grid] = attentionGrid(b, loc, op, kRows, kKeys);
  if (ShapedType::isDynamic(dimOf(k, 1))) {
    Value anyKeys = b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::sgt, keys, ib.c(0));
    grid = gridWhere(b, loc, anyKeys, grid);
    zeroOutput(b, loc, op.getOut(),
               b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, keys, ib.c(0)));
  }
  Value qMap = tensorMap(b, loc, q, kRows, kColumns);
  Value kMap = tensorMap(b, loc, k, kKeys, kColumns);
  Value vMap = tensorMap(b, loc, v, kKeys, kColumns);
  auto launch = gpu::LaunchOp::create(b, loc, grid, ib.c(1), ib.c(1),
                                      ib.c(kThreads), ib.c(1), ib.c(1),
                                      arith::ConstantIntOp::create(b, loc, sharedBytes, 32));
  b.setInsertionPointToStart(&launch.getBody().front());
  IndexBuilder x{b, loc};
  auto workgroup = gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  Value shared = gpu::DynamicSharedMemoryOp::create(
      b, loc, MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), AffineMap(), workgroup));
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, shared);
  Value qStart = x.add(base, x.rem(arith::SubIOp::create(b, loc, x.c(kAlign), x.rem(base, kAlign)),
                                   kAlign));
  Value kStart = x.add(qStart, qBytes);
  Value vStart = x.add(kStart, kStages * kStageBytes);
  // The mbarriers: Q's, then each stage's `full` and `empty`.
  Value qFull = x.add(vStart, kStages * vStageBytes);
  auto full = [&](IndexBuilder &y, Value stage) { return y.add(y.add(qFull, 8), y.mul(stage, 8)); };
  auto empty = [&](IndexBuilder &y, Value stage) {
    return y.add(y.add(qFull, 8 + 8 * kStages), y.mul(stage, 8));
  };
  auto parityOf = [&](IndexBuilder &y, Value tile) { return y.rem(y.div(tile, kStages), 2); };
  // Blocks take the row tiles of a batch entry last first: under a causal
  // mask the longest run first.
  Value blockId = launch.getBlockIds().x, tid = launch.getThreadIds().x;
  Value n = x.div(blockId, rowTiles);
  Value row0 = x.mul(arith::SubIOp::create(b, loc, x.add(rowTiles, -1),
                                           arith::RemUIOp::create(b, loc, blockId, rowTiles)),
                     kRows);
  // Key tiles: all, or (causal) up to the one holding the block's last row.
  Value tiles = keyTiles;
  if (op.getCausal())
    tiles = arith::MinUIOp::create(b, loc, tiles, x.div(x.add(row0, kRows + kKeys - 1), kKeys));
  // At least one (the kernel runs only where there are keys and rows): a
  // causal loop known to run keeps ptxas from serialising the wgmma chains
  // of run-time sizes.
  tiles = arith::MaxUIOp::create(b, loc, tiles, x.c(1));

  Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid, x.c(0));
  scf::IfOp::create(b, loc, first, [&](OpBuilder &tb, Location l) {
    IndexBuilder y{tb, l};
    NVVM::MBarrierInitOp::create(tb, l, sharedPointer(tb, l, qFull), i32(tb, l, 1), Value());
    for (int64_t s = 0; s < kStages; ++s) {
      NVVM::MBarrierInitOp::create(tb, l, sharedPointer(tb, l, full(y, y.c(s))), i32(tb, l, 1),
                                   Value());
      NVVM::MBarrierInitOp::create(tb, l, sharedPointer(tb, l, empty(y, y.c(s))),
                                   i32(tb, l, kConsumerWarps), Value());
    }
    NVVM::FenceMbarrierInitOp::create(tb, l);
    scf::YieldOp::create(tb, l);
  });
  gpu::BarrierOp::create(b, loc);

  Value warpgroup = x.div(tid, kWarpgroupThreads);
  Value isProducer = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, warpgroup, x.c(0));
  auto roles = scf::IfOp::create(b, loc, isProducer, /*withElseRegion=*/true);
  {
    // The producer: Q, then per tile, once the consumers gave its stage
    // back, K's and V's boxes.
    OpBuilder pb = roles.getThenBodyBuilder();
    NVVM::SetMaxRegisterOp::create(pb, loc, kProducerRegisters,
                                   NVVM::SetMaxRegisterAction::decrease);
    scf::IfOp::create(pb, loc, first, [&](OpBuilder &tb, Location l) {
      IndexBuilder y{tb, l};
      // The barrier (a pointer) armed with the bytes its copies bring.
      auto arm = [&](OpBuilder &ab, Value barrier, int64_t bytes) {
        Value pointer = sharedPointer(ab, l, barrier);
        NVVM::MBarrierArriveExpectTxOp::create(ab, l, Type(), pointer, i32(ab, l, bytes),
                                               NVVM::MemScopeKind::CTA, false, Value());
        return pointer;
      };
      Value qBarrier = arm(tb, qFull, qBytes);
      for (int64_t c = 0; c < depth / kColumns; ++c)
        tmaLoad(tb, l, qMap, {y.c(c * kColumns), row0, n}, y.add(qStart, c * kRows * kSwizzleBytes),
                qBarrier);
      scf::ForOp::create(
          tb, l, y.c(0), tiles, y.c(1), ValueRange{},
          [&](OpBuilder &lb, Location ll, Value t, ValueRange) {
            IndexBuilder z{lb, ll};
            Value stage = z.rem(t, kStages), key0 = z.mul(t, kKeys);
            // A fresh barrier's "previous phase" counts as complete: the
            // first round does not wait.
            waitBarrier(lb, ll, empty(z, stage), z.xorI(parityOf(z, t), z.c(1)));
            Value barrier = arm(lb, full(z, stage), kStageBytes + vStageBytes);
            auto load = [&](Value map, Value start, int64_t stageBytes, int64_t dim) {
              for (int64_t c = 0; c < dim / kColumns; ++c)
                tmaLoad(lb, ll, map, {z.c(c * kColumns), key0, n},
                        z.add(z.add(start, z.mul(stage, stageBytes)), c * kKeys * kSwizzleBytes),
                        barrier);
            };
            load(kMap, kStart, kStageBytes, depth);
            load(vMap, vStart, vStageBytes, width);
            scf::YieldOp::create(lb, ll);
          });
      scf::YieldOp::create(tb, l);
    });
  }

  b.setInsertionPointToStart(&roles.getElseRegion().front());
  NVVM::SetMaxRegisterOp::create(b, loc, kConsumerRegisters,
                                 NVVM::SetMaxRegisterAction::increase);
  Value consumer = x.add(warpgroup, -1);
  Value lane = x.rem(tid, 32), warp = x.rem(x.div(tid, 32), 4);
  Value firstLane = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, x.c(0));
  Value warpRow0 = x.add(row0, x.add(x.mul(consumer, kWarpgroupRows), x.mul(warp, 16)));
  // A lane's accumulator rows: lane / 4 (+8); its columns 2 * (lane % 4) (+1).
  Value inQuad = x.rem(lane, 4);
  Value rowA = x.add(warpRow0, x.div(lane, 4)), rowB = x.add(rowA, 8);
  AttentionFragments frags{op, n, rowA, rowB, inQuad, warpRow0, rows, keys};
  // Descriptors: Q's 64 rows of this warpgroup and K's rows, K-major (8-row
  // groups 1024 bytes apart); V N-major (64-column blocks kKeys rows apart).
  Value qDescriptor = matrixDescriptor(
      b, loc, x.add(qStart, x.mul(consumer, kWarpgroupRows * kSwizzleBytes)),
      descriptorBits(16, 8 * kSwizzleBytes));
  Value kDescriptor = matrixDescriptor(b, loc, kStart, descriptorBits(16, 8 * kSwizzleBytes));
  Value vDescriptor = matrixDescriptor(b, loc, vStart,
                                       descriptorBits(kKeys * kSwizzleBytes, 8 * kSwizzleBytes));
  auto plus = [&](OpBuilder &pb, Location l, Value descriptor, Value stage, int64_t stageBytes,
                  int64_t bytes) {
    Value at = arith::AddIOp::create(
        pb, l,
        arith::MulIOp::create(pb, l, toI64(pb, l, stage),
                              arith::ConstantIntOp::create(pb, l, stageBytes / 16, 64)),
        arith::ConstantIntOp::create(pb, l, bytes / 16, 64));
    return arith::AddIOp::create(pb, l, descriptor, at).getResult();
  };
  auto structOf = [&](int64_t count) {
    return LLVM::LLVMStructType::getLiteral(b.getContext(),
                                            SmallVector<Type>(count, b.getF32Type()));
  };
  auto sType = structOf(kKeys / 2), oType = structOf(width / 2);
  // One arrival per warp gives stage `stage` back to the producer.
  auto release = [&](OpBuilder &rb, Location l, Value when, Value stage) {
    scf::IfOp::create(rb, l, when, [&](OpBuilder &tb, Location tl) {
      IndexBuilder t{tb, tl};
      NVVM::MBarrierArriveOp::create(tb, tl, Type(), sharedPointer(tb, tl, empty(t, stage)),
                                     Value());
      scf::YieldOp::create(tb, tl);
    });
  };

  waitBarrier(b, loc, qFull, x.c(0));
  SmallVector<Value> init = SoftmaxState::initial(b, loc).values();
  init.push_back(LLVM::ZeroOp::create(b, loc, oType));
  auto loop = scf::ForOp::create(
      b, loc, x.c(0), tiles, x.c(1), init,
      [&](OpBuilder &lb, Location l, Value t, ValueRange state) {
        IndexBuilder y{lb, l};
        Value stage = y.rem(t, kStages);
        waitBarrier(lb, l, full(y, stage), parityOf(y, t));
        // S = Q K^T over the head dim, 16 at a time: 32 bytes along a
        // swizzled row, the next 64-column block past 64.
        NVVM::WgmmaFenceAlignedOp::create(lb, l);
        Value s = LLVM::UndefOp::create(lb, l, sType);
        for (int64_t kk = 0; kk < depth / 16; ++kk) {
          int64_t inRow = (kk % 4) * 32, block = kk / 4;
          s = NVVM::WgmmaMmaAsyncOp::create(
              lb, l, sType, s,
              plus(lb, l, qDescriptor, y.c(0), 0, block * kRows * kSwizzleBytes + inRow),
              plus(lb, l, kDescriptor, stage, kStageBytes, block * kKeys * kSwizzleBytes + inRow),
              NVVM::MMAShapeAttr::get(lb.getContext(), 64, kKeys, 16), type, type,
              NVVM::WGMMATypes::f32,
              kk == 0 ? NVVM::WGMMAScaleOut::zero : NVVM::WGMMAScaleOut::one,
              NVVM::WGMMAScaleIn::one, NVVM::WGMMAScaleIn::one, NVVM::MMALayout::row,
              NVVM::MMALayout::col, /*satfinite=*/nullptr);
        }
        NVVM::WgmmaGroupSyncAlignedOp::create(lb, l);
        // S done, and the last tile's P V before it: that stage is free.
        NVVM::WgmmaWaitGroupSyncOp::create(lb, l, 0);
        release(lb, l,
                y.both(firstLane, arith::CmpIOp::create(lb, l, arith::CmpIPredicate::ugt, t,
                                                        y.c(0))),
                y.rem(y.add(t, kStages - 1), kStages));

        SmallVector<Value> scores;
        for (int64_t i = 0; i < kKeys / 2; ++i)
          scores.push_back(LLVM::ExtractValueOp::create(lb, l, s, i));
        SoftmaxStep softmax =
            onlineSoftmaxStep(lb, l, frags, scores, y.mul(t, kKeys), SoftmaxState::of(state));
        // O = O * alpha + P V.
        Value o = state[4];
        for (int64_t i = 0; i < width / 2; ++i) {
          Value alpha = i % 4 < 2 ? softmax.alphaA : softmax.alphaB;
          o = LLVM::InsertValueOp::create(
              lb, l, o,
              arith::MulFOp::create(lb, l, LLVM::ExtractValueOp::create(lb, l, o, i), alpha), i);
        }
        // P rounded whole before the chain: registers written between its
        // wgmmas would make ptxas wait for the ones before.
        SmallVector<SmallVector<Value>> p;
        for (int64_t kk = 0; kk < kKeys / 16; ++kk)
          p.push_back(probabilityFragment(lb, l, softmax.probs, kk, element, /*asBits=*/true));
        NVVM::WgmmaFenceAlignedOp::create(lb, l);
        for (int64_t kk = 0; kk < kKeys / 16; ++kk)
          o = wgmmaWithRegisterA(lb, l, o, p[kk],
                                 plus(lb, l, vDescriptor, stage, vStageBytes,
                                      kk * 16 * kSwizzleBytes),
                                 width, element);
        NVVM::WgmmaGroupSyncAlignedOp::create(lb, l);
        SmallVector<Value> next = softmax.next.values();
        next.push_back(o);
        scf::YieldOp::create(lb, l, next);
      });
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
  Value o = loop.getResult(4);

  // out = O / sum.
  auto [sumA, sumB] = rowSums(b, loc, SoftmaxState::of(loop.getResults()));
  auto pairType = VectorType::get({2}, b.getF32Type());
  for (int64_t j = 0; j < width / 8; ++j)
    for (int64_t h = 0; h < 2; ++h) {
      Value pair = vector::FromElementsOp::create(
          b, loc, pairType,
          ValueRange{LLVM::ExtractValueOp::create(b, loc, o, 4 * j + 2 * h),
                     LLVM::ExtractValueOp::create(b, loc, o, 4 * j + 2 * h + 1)});
      storeOutputPair(b, loc, frags, h ? rowB : rowA, x.add(x.mul(inQuad, 2), j * 8), pair,
                      h ? sumB : sumA);
    }
  b.setInsertionPointAfter(roles);
  gpu::TerminatorOp::create(b, loc);
  eraseReplacedAttention(op);
  return success();
}

struct KilnCudaWgmmaAttentionPass
    : kiln::impl::KilnCudaWgmmaAttentionBase<KilnCudaWgmmaAttentionPass> {
  using KilnCudaWgmmaAttentionBase::KilnCudaWgmmaAttentionBase;
  void runOnOperation() override {
    SmallVector<kernel::AttentionOp> ops;
    // TMA takes no empty dim: attention with a static empty dim is the
    // mma.sync kernel's (a run-time size is checked at run time).
    auto sized = [](Value v) {
      return !llvm::is_contained(cast<ShapedType>(v.getType()).getShape(), 0);
    };
    getOperation().walk([&](kernel::AttentionOp op) {
      if (isa<MemRefType>(op.getOut().getType()) && fitsTensorCoreKernel(op) &&
          llvm::all_of(op->getOperands(), sized))
        ops.push_back(op);
    });
    for (auto op : ops)
      if (failed(buildWgmmaAttention(op, maxSharedBytes)))
        return signalPassFailure();
  }
};

} // namespace
