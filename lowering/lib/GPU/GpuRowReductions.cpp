//===- GpuRowReductions.cpp - the kiln-gpu-row-reductions pass -----------===//
//
// A reduction over the innermost loop runs one row per block: the block's
// threads stride over the row (coalesced, 16 bytes a load where the layout
// allows), each keeps a partial result, and gpu.all_reduce combines them
// (warp shuffles, then shared memory). The generic mapping would give each
// row to one thread. Row reductions and row-wise elementwise ops over the
// same rows that follow it join the same kernel as further stages.
//
// A static row short enough for each thread's share to stay in registers
// is read once: every stage runs its share as a few unrolled chunks, and
// later stages reuse what earlier ones loaded or stored (each thread reads
// back only its own elements), so a softmax or layer_norm reads its row
// from memory once and CSE merges what stages recompute. A row's
// statistics reach later stages from the all-reduce, which every thread
// holds; a stage waits at a barrier only where its accesses and an earlier
// stage's may meet in different threads; temporaries nothing reads any
// more are erased. A row of run-time length keeps the first 32 elements
// per thread so, and loops over the rest; with run-time-sizes (CUDA) such
// a kernel comes in variants the host picks by the run's row length
// (RowKernels: unmasked vectors, masked vectors, scalar). A row-wise op
// right before the first reduction (bf16 rows widened to f32) joins as the
// first stage.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/Common/RowReduction.h"
#include "kiln/Lowering/Common/VectorUtils.h"
#include "kiln/Lowering/Common/Tuned.h"
#include "kiln/Lowering/GPU/BlockLoop.h"
#include "kiln/Lowering/GPU/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <functional>

namespace kiln {
#define GEN_PASS_DEF_KILNGPUROWREDUCTIONS
#include "kiln/Lowering/GPU/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

using Kind = vector::CombiningKind;
using kiln::loopKeys;
using kiln::loopSize;
using kiln::loopSources;
using kiln::RangeKey;
using kiln::rangeKey;

/// A thread keeps at most this many elements of each row operand in
/// registers (8192 f32 over 256 threads); longer rows loop and read again.
constexpr int64_t kMaxRowElementsPerThread = 32;

/// The grid of a target without a cap below the row counts taken (CUDA's
/// 2^31-1 blocks in x).
constexpr int64_t kUncappedGridX = std::numeric_limits<int32_t>::max();

/// The accesses of row kernels' chunks that a row's later stages may not
/// read back from memory: stores of unrolled chunks (the head of the row,
/// passed on in registers), and loads in loops over the rest of a row of
/// run-time length (its tail).
struct RowParts {
  llvm::DenseSet<Operation *> headStores, tailLoads;
  /// A variant's launch -> the launch of the kernel's first variant.
  llvm::DenseMap<Operation *, Operation *> firstVariant;
};

/// Where a variant of a row kernel launches (RowKernels): where `launchIf`
/// holds (a host i1; null: always). Rows of run-time length `alignedRow`
/// (if any) are a multiple of the lanes long there, so they take vector
/// accesses; with `fullRows` they also fill every thread's unrolled chunks
/// (no masks).
struct RowVariant {
  Value launchIf;
  RangeKey alignedRow;
  bool fullRows = false;
};

/// One block per row of an iteration space `outerRanges x [row length]`,
/// running stages one after another, separated by barriers: row reductions
/// (threads stride the row, gpu.all_reduce combines, thread 0 stores) and
/// row-wise elementwise ops that read what earlier stages stored for the row.
/// A softmax (row max, sum of exp, normalise) is one kernel whose later
/// passes over the row hit the cache.
class RowKernel {
public:
  /// The rows of `first`'s loops but the innermost; a run-time size among
  /// them is read on the host (`b`, where the kernel's launch goes).
  RowKernel(OpBuilder &b, Location loc, linalg::GenericOp first, int64_t blockSize,
            int64_t lanes, int64_t maxGridX, bool hoistRowValues, RowParts &parts,
            RowVariant variant = {})
      : outerRanges(ArrayRef(loopKeys(first)).drop_back()), blockSize(blockSize),
        lanes(lanes), hoistRowValues(hoistRowValues), alignedRow(variant.alignedRow),
        fullRows(variant.fullRows), loc(loc), parts(parts) {
    Value launchIf = variant.launchIf;
    auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); };
    SmallVector<Value> sizes;
    Value rows = c(1);
    SmallVector<std::pair<Value, int64_t>> sources = loopSources(first);
    for (auto source : ArrayRef(sources).drop_back()) {
      sizes.push_back(loopSize(b, loc, source));
      rows = b.createOrFold<arith::MulIOp>(loc, rows, sizes.back());
    }
    // More rows than the grid takes (Vulkan's 65535; a run-time count may
    // be more): each block loops over rows blockId, blockId + grid, ...
    std::optional<int64_t> staticRows = getConstantIntValue(rows);
    bool rowLoop = staticRows ? *staticRows > maxGridX : maxGridX < kUncappedGridX;
    Value grid = rows;
    if (rowLoop)
      grid = kiln::indexValue(b, loc,
                              kiln::HostSizes(b, loc).min(rows, b.getIndexAttr(maxGridX)));
    if (launchIf) // an empty grid otherwise, which the runtime skips
      grid = arith::SelectOp::create(b, loc, launchIf, grid, c(0));
    launch = gpu::LaunchOp::create(b, loc, grid, c(1), c(1), c(blockSize),
                                   c(1), c(1));
    OpBuilder ib = OpBuilder::atBlockBegin(&launch.getBody().front());
    ib.setInsertionPoint(gpu::TerminatorOp::create(ib, loc));
    tid = launch.getThreadIds().x;
    Value row = launch.getBlockIds().x;
    stageBlock = &launch.getBody().front();
    if (rowLoop) {
      // Uniform per block, so the stages' barriers stay block-wide.
      auto loop = scf::ForOp::create(ib, loc, row, rows, launch.getGridSize().x);
      stageBlock = loop.getBody();
      row = loop.getInductionVar();
      ib.setInsertionPointToStart(stageBlock);
    }
    // The row's outer indices, innermost outer dim fastest.
    outer.resize(outerRanges.size());
    Value rest = row;
    for (int64_t d = static_cast<int64_t>(outerRanges.size()) - 1; d >= 0; --d) {
      Value size = outerRanges[d].first
                       ? sizes[d]
                       : arith::ConstantIndexOp::create(ib, loc, outerRanges[d].second);
      outer[d] = arith::RemUIOp::create(ib, loc, rest, size);
      rest = arith::DivUIOp::create(ib, loc, rest, size);
    }
  }

  /// True if `op` iterates over this kernel's rows and reads what earlier
  /// stages wrote only in its own row (other blocks write other rows).
  bool fits(linalg::GenericOp op) const {
    SmallVector<RangeKey> ranges = loopKeys(op);
    if (ranges.empty() || ArrayRef(ranges).drop_back() != ArrayRef(outerRanges))
      return false;
    // A run-time row length is read on the host before the launch.
    Operation *length = loopSources(op).back().first.getDefiningOp();
    if (ranges.back().first && length && !length->isBeforeInBlock(launch))
      return false;
    return llvm::all_of(written, [&](Value buffer) { return readsOwnRows(op, buffer); });
  }

  /// True if `op` reads `buffer`'s elements (through whatever view) only as
  /// `buffer` indexes them, in its own row: what a stage wrote into
  /// `buffer` is then read in the same block (a view shifted by an offset
  /// would read another row's, or another thread's, elements).
  bool readsOwnRows(linalg::GenericOp op, Value buffer) const {
    return llvm::all_of(op.getDpsInputOperands(), [&](OpOperand *in) {
      return rootOf(in->get()) != rootOf(buffer) ||
             (sameView(in->get(), buffer) && sameRow(op.getMatchingIndexingMap(in)));
    });
  }

  Operation *launchOp() const { return launch; }

  /// A reduction over the row, `reduction` of `op`.
  void addReduction(linalg::GenericOp op, const kiln::RowReduction &reduction,
                    gpu::AllReduceOperation allReduce) {
    Value out = op.getDpsInits()[0];
    Value forwardedInit = rowValues.lookup(out);
    wrote(out);
    OpBuilder b = beginStage();
    Type accType = reduction.combiner->getResult(0).getType();
    int64_t width = vectorWidth(op);
    Value init = kiln::reductionIdentity(b, loc, reduction.kind, accType);
    if (width)
      init = vector::BroadcastOp::create(b, loc, VectorType::get({width}, accType),
                                         init);
    Value partial = forEachChunk(
        b, op, width, init, [&](OpBuilder &lb, Value j, Chunk chunk, Value acc) {
          IRMapping mapping = loadInputs(lb, op, j, width, chunk);
          kiln::cloneBody(lb, loc, *op.getBody(), mapping, width, reduction.combiner);
          Value next = vector::makeArithReduction(lb, loc, reduction.kind, acc,
                                                  mapping.lookup(reduction.element));
          if (chunk.inRange) { // a masked chunk leaves the partial as it is
            Value keep = chunk.inRange;
            if (auto vt = dyn_cast<VectorType>(acc.getType())) // SPIR-V selects lanewise
              keep = vector::BroadcastOp::create(lb, loc, vt.clone(lb.getI1Type()), keep);
            next = arith::SelectOp::create(lb, loc, keep, next, acc);
          }
          return next;
        });
    if (width)
      partial = vector::ReductionOp::create(b, loc, reduction.kind, partial);
    Value total = gpu::AllReduceOp::create(
        b, loc, partial, gpu::AllReduceOperationAttr::get(b.getContext(), allReduce),
        /*uniform=*/true);
    // With the row's initial value known in every thread, so is the result:
    // later stages take it from registers, thread 0 stores it for whoever
    // reads the buffer after the kernel.
    Value result;
    if (forwardedInit) {
      result = vector::makeArithReduction(b, loc, reduction.kind, total, forwardedInit);
      rowValues[out] = result;
    }
    Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid,
                                        arith::ConstantIndexOp::create(b, loc, 0));
    scf::IfOp::create(b, loc, first, [&](OpBuilder &ib, Location l) {
      Value stored = result;
      if (!stored) {
        Value init = memref::LoadOp::create(ib, l, out, outer);
        stored = vector::makeArithReduction(ib, l, reduction.kind, total, init);
      }
      memref::StoreOp::create(ib, l, stored, out, outer);
      scf::YieldOp::create(ib, l);
    });
    if (!forwardedInit)
      touched(out, /*write=*/false, Threads::First);
    touched(out, /*write=*/true, Threads::First);
    endStage();
  }

  /// A fill of a buffer holding one value per row.
  void addFill(linalg::FillOp fill) {
    Value out = fill.getOutputs()[0];
    wrote(out);
    OpBuilder b = beginStage();
    Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid,
                                        arith::ConstantIndexOp::create(b, loc, 0));
    scf::IfOp::create(b, loc, first, [&](OpBuilder &ib, Location l) {
      memref::StoreOp::create(ib, l, fill.getInputs()[0], out, outer);
      scf::YieldOp::create(ib, l);
    });
    rowValues[out] = fill.getInputs()[0];
    touched(out, /*write=*/true, Threads::First);
    endStage();
  }

  bool fitsRows(linalg::FillOp fill) const {
    Value out = fill.getOutputs()[0];
    auto type = dyn_cast<MemRefType>(out.getType());
    if (!type || type.getRank() != static_cast<int64_t>(outerRanges.size()))
      return false;
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (rangeKey(out, d) != outerRanges[d])
        return false;
    return true;
  }

  /// An elementwise op over the row, writing its output in place.
  void addElementwise(linalg::GenericOp op) {
    wrote(op.getDpsInits()[0]);
    int64_t width = vectorWidth(op);
    producers[rootOf(op.getDpsInits()[0])] = {
        OwningOpRef<linalg::GenericOp>(cast<linalg::GenericOp>(op->clone())), stages, width};
    OpBuilder b = beginStage();
    Value out = op.getDpsInits()[0];
    forEachChunk(b, op, width, nullptr, [&](OpBuilder &lb, Value j, Chunk chunk, Value) {
      IRMapping mapping = loadInputs(lb, op, j, width, chunk);
      kiln::cloneBody(lb, loc, *op.getBody(), mapping, width);
      Value v = mapping.lookup(op.getBody()->getTerminator()->getOperand(0));
      SmallVector<Value> at(outer);
      at.push_back(j);
      auto store = [&](OpBuilder &sb, Location l) {
        Operation *stored =
            width ? vector::StoreOp::create(sb, l, v, out, at, /*nontemporal=*/false,
                                            alignmentOf(sb, out, width))
                        .getOperation()
                  : memref::StoreOp::create(sb, l, v, out, at).getOperation();
        if (chunk.index >= 0)
          parts.headStores.insert(stored);
      };
      if (chunk.inRange)
        scf::IfOp::create(lb, loc, chunk.inRange, [&](OpBuilder &ib, Location l) {
          store(ib, l);
          scf::YieldOp::create(ib, l);
        });
      else
        store(lb, loc);
      // Later stages read this chunk of the row from registers (past a
      // masked chunk's end they compute on values they never store).
      if (chunk.index >= 0)
        loaded[{out, op.getMatchingIndexingMap(op.getDpsInitOperand(0)), chunk.index, width}] = v;
      return Value();
    });
    touched(out, /*write=*/true, Threads::Spread, width);
    endStage();
  }

private:
  /// Which of a thread's unrolled chunks of the row a step handles: its
  /// number, and where the row may end inside it, whether it is in range
  /// (null: wholly in range). `index` is -1 inside a loop over the row.
  struct Chunk {
    int64_t index = -1;
    Value inRange;
  };

  /// Runs `step` over this thread's share of `op`'s row, `width` lanes at
  /// a time, threading `init` (null: no carry) through it; returns the
  /// carry. A static row of at most kMaxRowElementsPerThread per thread
  /// runs as unrolled chunks (their loads reusable by later stages), longer
  /// ones as a loop; a row of run-time length as that many masked chunks,
  /// then a loop over what is left (none, for rows up to blockSize *
  /// kMaxRowElementsPerThread).
  Value forEachChunk(OpBuilder &b, linalg::GenericOp op, int64_t width, Value init,
                     function_ref<Value(OpBuilder &, Value, Chunk, Value)> step) {
    int64_t w = std::max<int64_t>(width, 1);
    Value start = arith::MulIOp::create(b, loc, tid, arith::ConstantIndexOp::create(b, loc, w));
    int64_t length = op.getStaticLoopRanges().back();
    bool runTime = ShapedType::isDynamic(length);
    int64_t chunks = runTime ? kMaxRowElementsPerThread / w : llvm::divideCeil(length, blockSize * w);
    auto loopFrom = [&](Value from, Value carry) {
      scf::ForOp loop = rowLoop(b, op, from, w, carry,
                                [&](OpBuilder &lb, Value j, Value c) {
                                  Value next = step(lb, j, Chunk{}, c);
                                  scf::YieldOp::create(lb, loc, next ? ValueRange{next}
                                                                     : ValueRange{});
                                });
      if (hoistRowValues)
        hoistOutOfRowLoop(loop, op.getDpsInits()[0]);
      return carry ? loop.getResult(0) : Value();
    };
    if (!runTime && chunks * w > kMaxRowElementsPerThread)
      return loopFrom(start, init);
    OpBuilder host(launch);
    Value rowLength = runTime ? loopSize(host, loc, loopSources(op).back())
                              : arith::ConstantIndexOp::create(b, loc, length).getResult();
    Value carry = init;
    for (int64_t k = 0; k < chunks; ++k) {
      Value j = arith::AddIOp::create(b, loc, start,
                                      arith::ConstantIndexOp::create(b, loc, k * blockSize * w));
      Chunk chunk{k, Value()};
      bool full = runTime && fullRows && loopKeys(op).back() == alignedRow;
      if ((runTime && !full) || (!runTime && (k + 1) * blockSize * w > length))
        chunk.inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, j, rowLength);
      carry = step(b, j, chunk, carry);
    }
    if (runTime)
      carry = loopFrom(arith::AddIOp::create(
                           b, loc, start,
                           arith::ConstantIndexOp::create(b, loc, chunks * blockSize * w)),
                       carry);
    return carry;
  }

  /// Moves what depends only on the row out of the stage's loop: loads of
  /// values earlier stages stored for the row (the barrier before the stage
  /// ordered them; this stage writes only `out`), then the pure ops on
  /// them. A softmax's 1 / sum is then one division per row, not per element
  /// (on Vulkan a correctly rounded f32 division is ~40 integer ops).
  void hoistOutOfRowLoop(scf::ForOp loop, Value out) {
    auto loopLike = cast<LoopLikeOpInterface>(loop.getOperation());
    moveLoopInvariantCode(loopLike); // the loads' index computations first
    Value written = rootOf(out);
    for (Operation &op : llvm::make_early_inc_range(loop.getBody()->without_terminator())) {
      auto load = dyn_cast<memref::LoadOp>(op);
      if (load && rootOf(load.getMemRef()) != written &&
          llvm::all_of(load->getOperands(),
                       [&](Value v) { return loop.isDefinedOutsideOfLoop(v); }))
        load->moveBefore(loop);
    }
    moveLoopInvariantCode(loopLike);
  }

  /// Whether views `a` and `b` of one buffer name the same element by the
  /// same indices: one value, or one type whose layout is static.
  static bool sameView(Value a, Value b) {
    if (a == b)
      return true;
    auto type = dyn_cast<MemRefType>(a.getType());
    int64_t offset;
    SmallVector<int64_t> strides;
    return type && type == b.getType() && rootOf(a) == rootOf(b) &&
           succeeded(type.getStridesAndOffset(strides, offset)) &&
           !ShapedType::isDynamic(offset) && llvm::none_of(strides, ShapedType::isDynamic);
  }

  /// The allocation (or argument) a view is a view of.
  static Value rootOf(Value v) {
    while (Operation *def = v.getDefiningOp()) {
      if (!isa<memref::SubViewOp, memref::ExpandShapeOp, memref::CollapseShapeOp,
               memref::CastOp, memref::ReinterpretCastOp>(def))
        break;
      v = def->getOperand(0);
    }
    return v;
  }

  /// A map that reads row (d0, ..., d_{n-2}) itself: the whole row, or its
  /// one value.
  bool sameRow(AffineMap map) const {
    unsigned rowDims = outerRanges.size();
    if (map.getNumResults() != rowDims && map.getNumResults() != rowDims + 1)
      return false;
    for (unsigned d = 0; d < map.getNumResults(); ++d)
      if (map.getResult(d) != getAffineDimExpr(d, map.getContext()))
        return false;
    return true;
  }

  /// Records that the stage about to begin writes `buffer`: what was
  /// loaded from it no longer holds.
  void wrote(Value buffer) {
    Value root = rootOf(buffer);
    written.push_back(buffer);
    lastWrite[root] = stages;
    SmallVector<std::tuple<Value, AffineMap, int64_t, int64_t>> stale;
    for (auto &[key, value] : loaded)
      if (rootOf(std::get<0>(key)) == root)
        stale.push_back(key);
    for (auto &key : stale)
      loaded.erase(key);
    SmallVector<Value> staleRows;
    for (auto &[key, value] : rowValues)
      if (rootOf(key) == root)
        staleRows.push_back(key);
    for (Value key : staleRows)
      rowValues.erase(key);
  }

  /// Which of the block's threads a stage's access to a buffer touches:
  /// thread 0 alone (a row's one value), every thread, or each thread its
  /// own elements of the row (`width` lanes from tid * width on, blockSize
  /// * width apart, the same in every stage of that width).
  enum class Threads { First, All, Spread };
  struct Access {
    Value buffer; // the view accessed
    bool write;
    Threads threads;
    int64_t width;
  };

  void touched(Value buffer, bool write, Threads threads, int64_t width = 0) {
    stageAccesses.push_back({buffer, write, threads, threads == Threads::Spread ? width : 0});
  }

  /// Whether two accesses to one buffer, one of them a write, may touch an
  /// element from different threads (each thread's own elements of two
  /// views differ unless the views are one).
  static bool conflict(const Access &a, const Access &b) {
    bool sameThreads = a.threads == b.threads && a.threads != Threads::All &&
                       a.width == b.width &&
                       (a.threads == Threads::First || sameView(a.buffer, b.buffer));
    return rootOf(a.buffer) == rootOf(b.buffer) && (a.write || b.write) && !sameThreads;
  }

  /// An insertion point for the next stage: after a barrier, so that it sees
  /// what earlier stages stored (endStage drops it when nothing the stage
  /// touched needs it).
  OpBuilder beginStage() {
    OpBuilder b(stageBlock->getTerminator());
    stageAccesses.clear();
    if (stages++ > 0)
      barrier = gpu::BarrierOp::create(b, loc);
    return b;
  }

  /// Keeps the stage's barrier only if one of its accesses conflicts with
  /// one since the last barrier kept; a softmax whose stages pass the row
  /// and its statistics in registers needs none (the all-reduces
  /// synchronise the block themselves).
  void endStage() {
    bool needed = llvm::any_of(stageAccesses, [&](const Access &a) {
      return llvm::any_of(sinceBarrier, [&](const Access &b) { return conflict(a, b); });
    });
    if (barrier && !needed)
      barrier.erase();
    else if (barrier)
      sinceBarrier.clear();
    barrier = nullptr;
    sinceBarrier.append(stageAccesses);
  }

  /// `lanes` when rows are whole vectors and every operand is a contiguous
  /// aligned row or one value per row; 0 otherwise.
  int64_t vectorWidth(linalg::GenericOp op) const {
    if (lanes <= 1)
      return 0;
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    unsigned last = ranges.size() - 1;
    bool aligned = ShapedType::isDynamic(ranges.back())
                       ? alignedRow.first && loopKeys(op).back() == alignedRow
                       : ranges.back() % lanes == 0;
    if (!aligned)
      return 0;
    for (OpOperand &operand : op->getOpOperands()) {
      auto type = cast<MemRefType>(operand.get().getType());
      // A buffer of run-time size is passed flat (kiln-gpu-kernel-sizes),
      // which kiln-spirv-vector-buffers cannot retype: scalar accesses
      // unless rows of that size are known aligned (CUDA only).
      if (!type.hasStaticShape() && !alignedRow.first)
        return 0;
      std::optional<kiln::Access> access =
          kiln::classify(op.getMatchingIndexingMap(&operand), operand.get(), last);
      if (!access || type.getElementTypeBitWidth() < 8)
        return 0;
      OpBuilder probe(op);
      if (*access == kiln::Access::Vector && !alignmentOf(probe, operand.get(), lanes))
        return 0;
    }
    return lanes;
  }

  /// The alignment of `width`-lane accesses of `buffer` along a row at
  /// multiples of `width`, or null: what its layout says, or, for a buffer
  /// of run-time size in a kernel of `alignedRow` rows, that its rows (of
  /// the row length, as the loop reads them along it) are whole vectors.
  IntegerAttr alignmentOf(OpBuilder &b, Value buffer, int64_t width) const {
    if (IntegerAttr known = kiln::alignmentAttr(b, buffer, width))
      return known;
    auto type = cast<MemRefType>(buffer.getType());
    if (!alignedRow.first || type.hasStaticShape() || !type.getLayout().isIdentity())
      return {};
    int64_t bytes = type.getElementTypeBitWidth() / 8;
    return b.getI64IntegerAttr(std::min<int64_t>(16, width * bytes));
  }

  /// The inputs of `op` at innermost index `j` (`width` lanes, 0: scalar).
  /// In an unrolled chunk, a value this thread loaded in an earlier stage
  /// (or this one) is reused, unless a stage since has written its buffer;
  /// past the row's end a masked chunk reads zeros.
  IRMapping loadInputs(OpBuilder &b, linalg::GenericOp op, Value j, int64_t width,
                       Chunk chunk) {
    SmallVector<Value> ivs(outer), rowIvs(outer);
    ivs.push_back(j);
    // A row value's indices are built without j, so that hoistOutOfRowLoop
    // sees its load as the row's.
    rowIvs.push_back(arith::ConstantIndexOp::create(b, loc, 0));
    unsigned last = ivs.size() - 1;
    IRMapping mapping;
    for (auto [i, in] : llvm::enumerate(op.getDpsInputOperands())) {
      AffineMap map = op.getMatchingIndexingMap(in);
      SmallVector<Value> idx =
          kiln::indicesFor(b, loc, map,
                           map.isFunctionOfDim(last) || !hoistRowValues ? ivs : rowIvs);
      Type elem = cast<MemRefType>(in->get().getType()).getElementType();
      bool alongRow = map.isFunctionOfDim(last);
      auto load = [&](OpBuilder &lb) -> Value {
        if (width == 0)
          return memref::LoadOp::create(lb, loc, in->get(), idx);
        if (kiln::classify(map, in->get(), last) == kiln::Access::Vector)
          return vector::LoadOp::create(lb, loc, VectorType::get({width}, elem), in->get(),
                                        idx, /*nontemporal=*/false,
                                        alignmentOf(lb, in->get(), width));
        return vector::BroadcastOp::create(lb, loc, VectorType::get({width}, elem),
                                           memref::LoadOp::create(lb, loc, in->get(), idx));
      };
      auto masked = [&]() -> Value {
        if (!alongRow || !chunk.inRange)
          return load(b);
        auto guarded = scf::IfOp::create(
            b, loc, chunk.inRange,
            [&](OpBuilder &tb, Location l) { scf::YieldOp::create(tb, l, load(tb)); },
            [&](OpBuilder &eb, Location l) {
              Type type = width ? Type(VectorType::get({width}, elem)) : elem;
              scf::YieldOp::create(eb, l, Value(arith::ConstantOp::create(
                                              eb, l, type, eb.getZeroAttr(type))));
            });
        return guarded.getResult(0);
      };
      // A load from memory, and which of the block's threads it touches.
      auto fromMemory = [&]() {
        touched(in->get(), /*write=*/false,
                alongRow && map.isIdentity() ? Threads::Spread : Threads::All, width);
        Value v = masked();
        if (alongRow && chunk.index < 0)
          if (Operation *load = v.getDefiningOp(); load && isa<memref::LoadOp, vector::LoadOp>(load))
            parts.tailLoads.insert(load);
        return v;
      };
      Value v;
      auto writtenAt = lastWrite.find(rootOf(in->get()));
      if (Value row = rowValues.lookup(in->get());
          row && !alongRow && map.getNumResults() == outer.size() && sameRow(map)) {
        v = width ? vector::BroadcastOp::create(b, loc, VectorType::get({width}, elem), row)
                  : row;
      } else if (chunk.index < 0 ||
                 (writtenAt != lastWrite.end() && writtenAt->second == stages - 1)) {
        v = alongRow && chunk.index < 0 ? recomputed(b, in->get(), map, j, width) : Value();
        if (!v)
          v = fromMemory();
      } else {
        Value &cached = loaded[{in->get(), map, alongRow ? chunk.index : -1, width}];
        if (!cached)
          cached = fromMemory();
        v = cached;
      }
      mapping.map(op.getBody()->getArgument(i), v);
    }
    return mapping;
  }

  /// Element `j` of the row of `buffer` (read through `map`) in a loop over
  /// a row's tail, computed again from the inputs of the elementwise stage
  /// of this kernel that wrote it, where that stage may run again: it wrote
  /// `buffer` itself in the same order and width, and nothing since wrote
  /// its inputs or its output. Null where not. A tail then reads the
  /// kernel's inputs again (or a reduction's value, kept in registers)
  /// instead of a temporary written for it: a row too long for registers
  /// (a layer_norm's centred f32 row) no longer needs a buffer as large as
  /// the input (eraseUnreadStores drops it), nor its round trip to memory.
  Value recomputed(OpBuilder &b, Value buffer, AffineMap map, Value j, int64_t width) {
    Value root = rootOf(buffer);
    auto producer = producers.find(root);
    if (producer == producers.end() || !map.isIdentity())
      return {};
    linalg::GenericOp op = *producer->second.op;
    int stage = producer->second.stage;
    if (op.getDpsInits()[0] != buffer || lastWrite.lookup(root) != stage ||
        producer->second.width != width)
      return {};
    for (OpOperand *in : op.getDpsInputOperands()) {
      Value inRoot = rootOf(in->get());
      auto writtenAt = lastWrite.find(inRoot);
      if (inRoot == root || (writtenAt != lastWrite.end() && writtenAt->second > stage))
        return {};
    }
    IRMapping mapping = loadInputs(b, op, j, width, Chunk{});
    kiln::cloneBody(b, loc, *op.getBody(), mapping, width);
    return mapping.lookup(op.getBody()->getTerminator()->getOperand(0));
  }

  /// for (j = start; j < length; j += blockSize * w) with an optional carry.
  scf::ForOp rowLoop(OpBuilder &b, linalg::GenericOp op, Value start, int64_t w, Value init,
                     function_ref<void(OpBuilder &, Value, Value)> step) {
    OpBuilder host(launch);
    Value length = loopSize(host, loc, loopSources(op).back());
    Value stride = arith::ConstantIndexOp::create(b, loc, blockSize * w);
    return scf::ForOp::create(
        b, loc, start, length, stride, init ? ValueRange{init} : ValueRange{},
        [&](OpBuilder &lb, Location, Value j, ValueRange carry) {
          step(lb, j, carry.empty() ? Value() : carry[0]);
        });
  }

  SmallVector<RangeKey> outerRanges;
  int64_t blockSize;
  int64_t lanes;
  bool hoistRowValues;
  RangeKey alignedRow;
  bool fullRows;
  Location loc;
  RowParts &parts;
  gpu::LaunchOp launch;
  Block *stageBlock; // where stages go: the launch's body or its loop over rows
  SmallVector<Value> outer;
  Value tid;
  int stages = 0;
  SmallVector<Value, 8> written;        // buffers that stages of this kernel wrote
  llvm::DenseMap<Value, int> lastWrite; // ... and the last stage that wrote each
  /// What this thread loaded (or stored) in unrolled chunks: (buffer,
  /// indexing map, chunk or -1 for a row's one value, width) -> the value.
  llvm::DenseMap<std::tuple<Value, AffineMap, int64_t, int64_t>, Value> loaded;
  /// A row's one value of a buffer that every thread holds (a fill's value,
  /// a reduction's result).
  llvm::DenseMap<Value, Value> rowValues;
  /// The elementwise stages: the buffer each wrote (its root) -> a copy of
  /// the op (the original is erased), the stage number it wrote at and its
  /// vector width.
  struct Producer {
    OwningOpRef<linalg::GenericOp> op;
    int stage;
    int64_t width;
  };
  llvm::DenseMap<Value, Producer> producers;
  gpu::BarrierOp barrier;             // the current stage's, until endStage
  SmallVector<Access> stageAccesses;  // the current stage's
  SmallVector<Access> sinceBarrier;   // earlier stages' since the last barrier
};

/// The reduction and its all-reduce op if `op` can be a RowKernel stage.
std::optional<std::pair<kiln::RowReduction, gpu::AllReduceOperation>>
reductionStage(linalg::GenericOp op) {
  std::optional<kiln::RowReduction> reduction = kiln::matchRowReduction(op);
  if (!reduction)
    return std::nullopt;
  Type accType = reduction->combiner->getResult(0).getType();
  if (!kiln::allReducesOn(accType))
    return std::nullopt;
  std::optional<gpu::AllReduceOperation> allReduce = kiln::allReduceOf(reduction->kind);
  if (!allReduce)
    return std::nullopt;
  // The ranges live in a named vector: a range-for over a view of the returned
  // temporary would read it after its destruction.
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t rows = 1;
  for (int64_t r : ArrayRef(ranges).drop_back())
    rows = ShapedType::isDynamic(r) || ShapedType::isDynamic(rows) ? ShapedType::kDynamic
                                                                   : rows * r;
  if (rows == 0 || (!ShapedType::isDynamic(rows) && rows > kUncappedGridX))
    return std::nullopt;
  return std::make_pair(*reduction, *allReduce);
}

/// An elementwise op that a RowKernel can run as a stage: all-parallel, its
/// output written in iteration order.
bool isRowElementwise(linalg::GenericOp op) {
  return op.hasPureBufferSemantics() && op.getNumDpsInits() == 1 &&
         kiln::hasScalarBody(op) && op.getNumLoops() > 0 &&
         op.getNumParallelLoops() == op.getNumLoops() &&
         op.getMatchingIndexingMap(op.getDpsInitOperand(0)).isIdentity();
}

/// A row kernel, or for rows of run-time length where vector accesses are
/// allowed (CUDA), variants of it built stage by stage alike, each launched
/// where the run's row length suits it (specialisation at run time; the
/// others' grids are empty): vector accesses where the length is a
/// multiple of the lanes, without masks where it also fills every thread's
/// unrolled chunks, else scalar.
class RowKernels {
public:
  RowKernels(OpBuilder &b, linalg::GenericOp first, const kiln::GpuRowReductionTunables &tiling,
             int64_t maxGridX, bool hoistRowValues, bool runTimeVectors, RowParts &parts) {
    Location loc = first.getLoc();
    auto make = [&](RowVariant variant) {
      variants.push_back(std::make_unique<RowKernel>(b, loc, first, tiling.blockSize,
                                                     tiling.vectorWidth, maxGridX,
                                                     hoistRowValues, parts,
                                                     variant));
    };
    std::pair<Value, int64_t> row = loopSources(first).back();
    if (!runTimeVectors || tiling.vectorWidth <= 1 || !row.first ||
        !cast<MemRefType>(row.first.getType()).isDynamicDim(row.second)) {
      make({});
      return;
    }
    // Three variants: rows of whole vectors that fill every thread's
    // unrolled chunks (no masks), shorter rows of whole vectors, the rest
    // (scalar). Index arithmetic only: the GPU plan evaluates it on the
    // host; a variant launches where its count of misfits is 0.
    auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); };
    auto add = [&](Value x, Value y) { return arith::AddIOp::create(b, loc, x, y).getResult(); };
    auto is = [&](arith::CmpIPredicate p, Value x, Value y) {
      return arith::CmpIOp::create(b, loc, p, x, y).getResult();
    };
    auto asIndex = [&](Value flag) {
      return arith::SelectOp::create(b, loc, flag, c(1), c(0)).getResult();
    };
    Value length = loopSize(b, loc, row);
    Value rest = arith::RemSIOp::create(b, loc, length, c(tiling.vectorWidth));
    Value filled = c(kMaxRowElementsPerThread * tiling.blockSize);
    Value shortRow = asIndex(is(arith::CmpIPredicate::slt, length, filled));
    Value longRow = asIndex(is(arith::CmpIPredicate::sge, length, filled));
    RangeKey aligned = rangeKey(row.first, row.second);
    make({is(arith::CmpIPredicate::eq, add(rest, shortRow), c(0)), aligned, true});
    make({is(arith::CmpIPredicate::eq, add(rest, longRow), c(0)), aligned, false});
    make({is(arith::CmpIPredicate::sgt, rest, c(0)), RangeKey(), false});
    for (auto &variant : ArrayRef(variants).drop_front())
      parts.firstVariant[variant->launchOp()] = variants[0]->launchOp();
  }

  bool fits(linalg::GenericOp op) const {
    return llvm::all_of(variants, [&](auto &k) { return k->fits(op); });
  }
  bool fitsRows(linalg::FillOp fill) const {
    return llvm::all_of(variants, [&](auto &k) { return k->fitsRows(fill); });
  }
  bool readsOwnRows(linalg::GenericOp op, Value buffer) const {
    return llvm::all_of(variants, [&](auto &k) { return k->readsOwnRows(op, buffer); });
  }
  void addFill(linalg::FillOp fill) {
    for (auto &k : variants)
      k->addFill(fill);
  }
  void addElementwise(linalg::GenericOp op) {
    for (auto &k : variants)
      k->addElementwise(op);
  }
  void addReduction(linalg::GenericOp op, const kiln::RowReduction &reduction,
                    gpu::AllReduceOperation allReduce) {
    for (auto &k : variants)
      k->addReduction(op, reduction, allReduce);
  }

private:
  SmallVector<std::unique_ptr<RowKernel>, 3> variants;
};

struct KilnGpuRowReductionsPass
    : kiln::impl::KilnGpuRowReductionsBase<KilnGpuRowReductionsPass> {
  using KilnGpuRowReductionsBase::KilnGpuRowReductionsBase;
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      Block &entry = func.getBody().front();
      // Allocations go first (with their run-time sizes: dims of the
      // arguments or of views of other allocations, and index arithmetic
      // on them), so that a kernel can take in stages whose buffers were
      // allocated after its first one.
      Block::iterator front = entry.begin();
      llvm::SmallPtrSet<Operation *, 16> hoisted;
      std::function<bool(Operation *)> hoist = [&](Operation *op) {
        if (hoisted.contains(op))
          return true;
        bool sizeArithmetic = isa<arith::ArithDialect>(op->getDialect()) &&
                              op->getNumRegions() == 0 && isMemoryEffectFree(op);
        if (!isa<memref::AllocOp, memref::DimOp, memref::ExpandShapeOp,
                 memref::CollapseShapeOp>(op) &&
            !op->hasTrait<OpTrait::ConstantLike>() && !sizeArithmetic)
          return false;
        for (Value v : op->getOperands())
          if (Operation *def = v.getDefiningOp(); def && !hoist(def))
            return false;
        if (&*front == op)
          ++front;
        else
          op->moveBefore(&entry, front);
        hoisted.insert(op);
        return true;
      };
      for (Operation &op : llvm::make_early_inc_range(entry))
        if (isa<memref::AllocOp>(op))
          hoist(&op);
      RowParts parts;
      std::optional<RowKernels> kernel;
      linalg::FillOp pendingFill; // a fill that may start the next kernel
      // A row-wise op (a widening of bf16 rows) that may start the next
      // kernel: after it, nothing but allocations, constants and pendingFill.
      linalg::GenericOp pendingElementwise;
      for (Operation &op : llvm::make_early_inc_range(entry)) {
        if (auto fill = dyn_cast<linalg::FillOp>(op);
            fill && fill.hasPureBufferSemantics()) {
          if (kernel && kernel->fitsRows(fill)) {
            kernel->addFill(fill);
            fill.erase();
            continue;
          }
          kernel.reset();
          if (pendingFill)
            pendingElementwise = nullptr;
          pendingFill = fill;
          continue;
        }
        auto generic = dyn_cast<linalg::GenericOp>(op);
        if (!generic) {
          if (!op.hasTrait<OpTrait::ConstantLike>() && !isa<memref::AllocOp>(op)) {
            kernel.reset();
            // Index arithmetic on sizes touches no memory: what is pending
            // may still run after it.
            if (!isMemoryEffectFree(&op)) {
              pendingFill = nullptr;
              pendingElementwise = nullptr;
            }
          }
          continue;
        }
        if (auto stage = reductionStage(generic)) {
          if (!kernel || !kernel->fits(generic)) {
            OpBuilder b(generic);
            SmallVector<int64_t> ranges = generic.getStaticLoopRanges();
            kiln::GpuRowReductionTunables tiling{blockSize, vectorWidth};
            Type element = getElementTypeOrSelf(generic->getOperand(0).getType());
            // Tune keys name static sizes; run-time ones take the defaults.
            if (llvm::none_of(ranges, ShapedType::isDynamic)) {
              int64_t rows = 1;
              for (int64_t r : ArrayRef(ranges).drop_back())
                rows *= r;
              if (auto tuned = kiln::tunedConfig(
                    getOperation(), generic, kiln::GpuRowReductionTunables::tuneSpace(),
                    "row_reduction", {kiln::tuneDtypeName(element)}, {rows, ranges.back()}))
                tiling = kiln::GpuRowReductionTunables::fromConfig(*tuned);
            }
            kernel.emplace(b, generic, tiling, maxGridX, hoistRowValues, runTimeSizes, parts);
            // The fill of this reduction's output right before it, and a
            // row-wise op before that: the first stages (a fill left in
            // place would run before the row-wise op, so that one stays too).
            // The reduction's own init is indexed by the rows' loops
            // (matchRowReduction), so it fits even where its `?` sizes come
            // from other values than the rows' (a size passed to the kernel).
            bool fillJoins = pendingFill &&
                             pendingFill.getOutputs()[0] == generic.getDpsInits()[0];
            if (pendingElementwise && (fillJoins || !pendingFill) &&
                kernel->fits(pendingElementwise) &&
                kernel->readsOwnRows(generic, pendingElementwise.getDpsInits()[0])) {
              kernel->addElementwise(pendingElementwise);
              pendingElementwise.erase();
            }
            if (fillJoins) {
              kernel->addFill(pendingFill);
              pendingFill.erase();
            }
          }
          pendingFill = nullptr;
          pendingElementwise = nullptr;
          kernel->addReduction(generic, stage->first, stage->second);
          generic.erase();
          continue;
        }
        pendingFill = nullptr;
        if (kernel && isRowElementwise(generic) && kernel->fits(generic)) {
          kernel->addElementwise(generic);
          generic.erase();
          continue;
        }
        kernel.reset();
        pendingElementwise = isRowElementwise(generic) ? generic : linalg::GenericOp();
      }
      kernel.reset();
      eraseUnreadStores(entry, parts);
    }
  }

  /// Erases the function's temporaries that nothing reads any more (a
  /// softmax's exponentials, now passed between stages in registers) with
  /// the stores into them; of a temporary read only in one kernel's loops
  /// over rows' tails, the stores of the rows' heads.
  static void eraseUnreadStores(Block &entry, const RowParts &parts) {
    for (auto alloc : llvm::make_early_inc_range(entry.getOps<memref::AllocOp>())) {
      Value buffer = alloc.getResult();
      auto isStore = [&](Operation *user) {
        if (auto store = dyn_cast<memref::StoreOp>(user))
          return store.getMemRef() == buffer && store.getValueToStore() != buffer;
        if (auto store = dyn_cast<vector::StoreOp>(user))
          return store.getBase() == buffer;
        // A size is not a read (row lengths of run-time size).
        if (auto dim = dyn_cast<memref::DimOp>(user))
          return dim.getConstantIndex().has_value();
        return isa<memref::DeallocOp>(user);
      };
      SmallVector<Operation *> tailLoads, headStores;
      bool onlyTails = true;
      for (Operation *user : buffer.getUsers()) {
        if (parts.tailLoads.contains(user))
          tailLoads.push_back(user);
        else if (!isStore(user))
          onlyTails = false;
        else if (parts.headStores.contains(user))
          headStores.push_back(user);
      }
      if (!onlyTails)
        continue;
      if (tailLoads.empty()) {
        for (Operation *user : llvm::make_early_inc_range(buffer.getUsers())) {
          if (auto dim = dyn_cast<memref::DimOp>(user)) {
            OpBuilder b(dim);
            dim.replaceAllUsesWith(getValueOrCreateConstantIndexOp(
                b, dim.getLoc(), alloc.getMixedSizes()[*dim.getConstantIndex()]));
          }
          user->erase();
        }
        alloc.erase();
        continue;
      }
      // A kernel's variants count as one kernel.
      auto launchOf = [&](Operation *op) -> Operation * {
        Operation *launch = op->getParentOfType<gpu::LaunchOp>();
        return parts.firstVariant.lookup(launch) ? parts.firstVariant.lookup(launch) : launch;
      };
      Operation *launch = launchOf(tailLoads.front());
      auto inLaunch = [&](Operation *op) { return launchOf(op) == launch; };
      if (llvm::all_of(tailLoads, inLaunch) && llvm::all_of(headStores, inLaunch))
        for (Operation *store : headStores)
          store->erase();
    }
  }
};

} // namespace
