//===- GpuNormalizeReductions.cpp - kiln-gpu-normalize-reductions --------===//
//
// Maps reductions so that no thread reduces a long run of elements alone
// (slow on a GPU; lavapipe ends an invocation's loops after 65535
// iterations, silently):
//
//   - adjacent reduction loops (all dims of a matrix, H and W of NCHW)
//     become one loop over collapsed views;
//   - a reduction whose inputs are contiguous along a parallel dim (a
//     channel mean of NCHW, a column sum) with many outputs or short
//     reductions runs a thread per output, serially over the reduction
//     (loads coalesced across threads): scf.parallel over the outputs;
//     with too few outputs, or too long a reduction, a thread per output
//     and chunk of it, then a thread per output over the chunks' partials;
//     so do long or run-time rows of accumulators the row passes cannot
//     all-reduce (f64, i64);
//   - otherwise the parallel loops move outside the reduced ones, so that
//     the row passes give each output a block (looping past a capped grid);
//   - a reduction still over several loops (dims 0, 2, 3 of NCHW; a view
//     that does not collapse) reduces its innermost reduced loop into a
//     temporary first, then the temporary over the others.
//
// Matmuls the targets' tiling passes left become such reductions first
// (a long or run-time K of many outputs in chunks of K, their count at run
// time where K is a run-time size). A pooling window (index sums) of more
// taps than a thread may loop over (kMaxSerialWindow) is split the fourth
// way. Left to the generic mapping's thread per output: shorter windows,
// and bodies the row passes do not take (linalg.index, several outputs)
// unless read across outputs (an argmax over a middle dim takes the second
// way).
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/Common/RowReduction.h"
#include "kiln/Lowering/Common/VectorUtils.h"
#include "kiln/Lowering/GPU/BlockLoop.h"
#include "kiln/Lowering/GPU/Passes.h"
#include "kiln/Lowering/GPU/SerialReductions.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SmallBitVector.h"

#include <algorithm>

namespace kiln {
#define GEN_PASS_DEF_KILNGPUNORMALIZEREDUCTIONS
#include "kiln/Lowering/GPU/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

using utils::IteratorType;

/// A thread per output of a window (the generic mapping's loops, not
/// unrolled) sums at most this many taps: lavapipe ends an invocation's
/// loops after 65535 iterations in all, the outer window loops' included.
constexpr int64_t kMaxSerialWindow = 32768;
/// A matmul's thread per output (or per output and chunk) sums at most this
/// much of K (unrolled: 4096 trips, well inside lavapipe's 65535).
constexpr int64_t kMaxSerialMatmul = 16384;

/// Runs of two or more adjacent reduction loops of `op`.
SmallVector<ReassociationIndices> adjacentReductionLoops(linalg::GenericOp op) {
  SmallVector<ReassociationIndices> runs;
  ReassociationIndices run;
  auto close = [&] {
    if (run.size() > 1)
      runs.push_back(run);
    run.clear();
  };
  for (auto [d, type] : llvm::enumerate(op.getIteratorTypesArray())) {
    if (type != IteratorType::reduction)
      close();
    else
      run.push_back(static_cast<int64_t>(d));
  }
  close();
  return runs;
}

/// Whether every map of `op` indexes with loops in some order, each at most
/// once, with `zeros` also size-1 dims (a broadcast row: a mean kept as
/// 1x3x1x1 for a variance).
bool projectedPermutations(linalg::GenericOp op, bool zeros = false) {
  return llvm::all_of(op.getIndexingMapsArray(), [&](AffineMap map) {
    if (!zeros)
      return map.isProjectedPermutation();
    // AffineMap's own check takes zeros only in maps of no more results
    // than dims, which a kept 1x3x1x1 over three loops is not.
    llvm::SmallBitVector seen(map.getNumDims());
    return llvm::all_of(map.getResults(), [&](AffineExpr e) {
      if (auto c = dyn_cast<AffineConstantExpr>(e))
        return c.getValue() == 0;
      auto d = dyn_cast<AffineDimExpr>(e);
      if (!d || seen.test(d.getPosition()))
        return false;
      seen.set(d.getPosition());
      return true;
    });
  });
}

/// Whether each operand's view of `op` can collapse the dims `runs` index
/// (maps are projected permutations keeping each run contiguous; layouts
/// let memref.collapse_shape merge them without a copy).
bool collapsible(linalg::GenericOp op, ArrayRef<ReassociationIndices> runs) {
  // A window's index sums (pooling) collapse no dims.
  if (!projectedPermutations(op) ||
      !linalg::areDimSequencesPreserved(op.getIndexingMapsArray(), runs))
    return false;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (!type)
      return false;
    AffineMap map = op.getMatchingIndexingMap(&operand);
    // The operand dims each run reads, grouped as collapse_shape wants.
    SmallVector<ReassociationIndices> groups;
    for (int64_t d = 0, rank = type.getRank(); d < rank;) {
      ReassociationIndices group{d};
      auto dim = dyn_cast<AffineDimExpr>(map.getResult(d));
      for (const ReassociationIndices &r : runs)
        if (dim && dim.getPosition() == static_cast<unsigned>(r.front()))
          for (size_t i = 1; i < r.size() && d + static_cast<int64_t>(i) < rank; ++i)
            group.push_back(d + static_cast<int64_t>(i));
      d += static_cast<int64_t>(group.size());
      groups.push_back(group);
    }
    if (!memref::CollapseShapeOp::isGuaranteedCollapsible(type, groups))
      return false;
  }
  return true;
}

/// The product of the static ranges of `op`'s loops of `kind`; nullopt if
/// one is a run-time size.
std::optional<int64_t> staticCount(linalg::LinalgOp op, IteratorType kind) {
  int64_t count = 1;
  for (auto [range, type] : llvm::zip(op.getStaticLoopRanges(), op.getIteratorTypesArray()))
    if (type == kind) {
      if (ShapedType::isDynamic(range))
        return std::nullopt;
      count *= range;
    }
  return count;
}

/// Whether an input that `op` reads along its reduction is contiguous along
/// a parallel loop: a block per output would read it strided, a thread per
/// output coalesced. (Inputs of one value per output, a row's statistics,
/// do not count.)
bool readsAcrossOutputs(linalg::GenericOp op) {
  SmallVector<IteratorType> iterators = op.getIteratorTypesArray();
  return llvm::any_of(op.getDpsInputOperands(), [&](OpOperand *in) {
    AffineMap map = op.getMatchingIndexingMap(in);
    bool alongReduction = llvm::any_of(map.getResults(), [&](AffineExpr e) {
      auto d = dyn_cast<AffineDimExpr>(e);
      return d && iterators[d.getPosition()] == IteratorType::reduction;
    });
    auto last = map.getNumResults() ? dyn_cast<AffineDimExpr>(map.getResults().back())
                                    : nullptr;
    return alongReduction && last && iterators[last.getPosition()] == IteratorType::parallel;
  });
}

bool threadPerOutput(linalg::GenericOp op) {
  std::optional<int64_t> outputs = staticCount(op, IteratorType::parallel),
                         length = staticCount(op, IteratorType::reduction);
  // A pooling window's index sums: its windows stay the generic mapping's.
  return projectedPermutations(op, /*zeros=*/true) && readsAcrossOutputs(op) && outputs &&
         length && kiln::isSerialPerOutput(*outputs, *length);
}

/// Whether `op` (a pooling window's or direct conv's index sums, which the
/// row passes do not collapse) has more taps than its thread per output
/// may loop over: such a window is split like a reduction over several
/// dims (its taps over the outer window loops in a temporary: slow, so
/// only where a thread would pass lavapipe's limit; a 3x3 conv of 512
/// channels to one took 35 s on lavapipe split at 4096 taps, 20 ms not).
bool longWindow(linalg::GenericOp op) {
  std::optional<int64_t> length = staticCount(op, IteratorType::reduction);
  return !length || *length > kMaxSerialWindow;
}

/// Whether `op`, read across outputs but no thread per output (too few
/// outputs, or too long a reduction, for a thread each), one reduced loop
/// of static sizes, runs a thread per output and chunk of the reduction.
bool chunked(linalg::GenericOp op) {
  std::optional<int64_t> outputs = staticCount(op, IteratorType::parallel),
                         length = staticCount(op, IteratorType::reduction);
  return op.getNumReductionLoops() == 1 && projectedPermutations(op, /*zeros=*/true) &&
         readsAcrossOutputs(op) && outputs && *outputs > 0 && length &&
         *length > kiln::kShortReduction && !threadPerOutput(op);
}

/// Whether `op`, one reduced loop of a run-time or long length whose
/// accumulator the row passes cannot all-reduce (f64, i64), would be left
/// to a thread per output over the whole row: such rows run in chunks too.
/// (An f64 sum of a `?` row ran on one thread: slow on every GPU, and
/// lavapipe ended it after 65535 iterations, silently.)
bool longRowsWithoutAllReduce(linalg::GenericOp op) {
  if (op.getNumReductionLoops() != 1 || op.getNumDpsInits() != 1 ||
      !projectedPermutations(op, /*zeros=*/true) ||
      kiln::allReducesOn(getElementTypeOrSelf(op.getDpsInits()[0].getType())))
    return false;
  std::optional<int64_t> length = staticCount(op, IteratorType::reduction);
  return !length || *length > kiln::kMaxSerialReduction;
}

bool parallelLoopsAreFirst(linalg::GenericOp op) {
  SmallVector<IteratorType> iterators = op.getIteratorTypesArray();
  return std::is_partitioned(iterators.begin(), iterators.end(),
                             [](IteratorType t) { return t == IteratorType::parallel; });
}

/// `op` with its parallel loops first, each kind in its order.
linalg::GenericOp parallelLoopsFirst(IRRewriter &rewriter, linalg::GenericOp op) {
  if (parallelLoopsAreFirst(op))
    return op;
  SmallVector<unsigned> order;
  for (IteratorType kind : {IteratorType::parallel, IteratorType::reduction})
    for (auto [d, type] : llvm::enumerate(op.getIteratorTypesArray()))
      if (type == kind)
        order.push_back(static_cast<unsigned>(d));
  FailureOr<linalg::GenericOp> swapped = linalg::interchangeGenericOp(rewriter, op, order);
  return succeeded(swapped) ? *swapped : op;
}

/// The scalar that a linalg.fill right before `op` (nothing but pure ops
/// between) filled `out` with, the fill erased: a thread per output starts
/// from it instead of loading it (one launch less). Null if there is none.
Value takeFill(IRRewriter &rewriter, linalg::GenericOp op, OpOperand &out) {
  // The thread per output must write every element the fill did (no
  // constant index into a longer dim), and nothing else read them first:
  // not `op` as an input, nothing before it (views included; its sizes
  // read no element).
  AffineMap map = op.getMatchingIndexingMap(&out);
  auto type = cast<MemRefType>(out.get().getType());
  for (auto [d, e] : llvm::enumerate(map.getResults()))
    if (isa<AffineConstantExpr>(e) && type.getDimSize(d) != 1)
      return nullptr;
  for (Operation *user : out.get().getUsers()) {
    Operation *here = op->getBlock()->findAncestorOpInBlock(*user);
    if (user != op && !isa<linalg::FillOp, memref::DimOp>(user) &&
        !(here && op->isBeforeInBlock(here)))
      return nullptr;
  }
  if (llvm::is_contained(op.getDpsInputs(), out.get()))
    return nullptr;
  for (Operation *prev = op->getPrevNode(); prev; prev = prev->getPrevNode()) {
    auto fill = dyn_cast<linalg::FillOp>(prev);
    if (fill && fill.getOutputs()[0] == out.get()) {
      Value value = fill.getInputs()[0];
      if (value.getType() != type.getElementType())
        return nullptr;
      rewriter.eraseOp(fill);
      return value;
    }
    if (!isPure(prev))
      return nullptr;
  }
  return nullptr;
}

/// The sizes of `op`'s loops, built before it.
SmallVector<Value> loopSizes(OpBuilder &b, linalg::GenericOp op) {
  // Named: a range-for over a view of the returned vector would read it
  // after its destruction.
  SmallVector<Range, 4> ranges =
      cast<linalg::LinalgOp>(op.getOperation()).createLoopRanges(b, op.getLoc());
  return llvm::map_to_vector(ranges, [&](const Range &range) {
    return getValueOrCreateConstantIndexOp(b, op.getLoc(), range.size);
  });
}

/// A thread per output and chunk of the one reduced loop: `count` chunks
/// of `size`, each combined from `identity` into `partials` [count,
/// outputs...].
struct Chunks {
  Value count;
  int64_t size;
  Value partials, identity;
};

/// `op` (parallel loops first) as a thread per output: an scf.parallel
/// over the outputs, each output loaded once into a register carried
/// through an scf.for per reduced loop (the innermost unrolled by
/// kSerialUnroll, so that its loads are in flight together; the combining
/// order stays the loops') and stored once (an output just filled starts
/// from the fill's value instead). With `chunks`, a thread per output and
/// chunk instead, storing into the chunk's partial.
void buildThreadPerOutput(IRRewriter &rewriter, linalg::GenericOp op,
                          std::optional<Chunks> chunks = std::nullopt) {
  Location loc = op.getLoc();
  unsigned outputs = op.getNumParallelLoops();
  // Looked for before anything is built between the fills and `op`.
  SmallVector<Value> filled;
  for (OpOperand &out : op.getDpsInitsMutable())
    filled.push_back(chunks ? nullptr : takeFill(rewriter, op, out));
  rewriter.setInsertionPoint(op);
  SmallVector<Value> ranges = loopSizes(rewriter, op);
  // The chunk outermost: the last output dim stays the threads' fastest.
  SmallVector<Value> threads;
  if (chunks)
    threads.push_back(chunks->count);
  threads.append(ranges.begin(), ranges.begin() + outputs);
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0),
        one = arith::ConstantIndexOp::create(rewriter, loc, 1);
  auto parallel = scf::ParallelOp::create(rewriter, loc, SmallVector<Value>(threads.size(), zero),
                                          threads, SmallVector<Value>(threads.size(), one));
  OpBuilder b(parallel.getBody()->getTerminator());
  // Loop indices in the op's loop order; the outputs' maps do not read the
  // reduced loops, whose slots are 0 for them.
  unsigned reduced = ranges.size() - outputs;
  SmallVector<Value> ivs = parallel.getInductionVars();
  if (chunks)
    ivs.erase(ivs.begin());
  ivs.append(reduced, zero);
  SmallVector<Value> lbs(reduced, zero), ubs(ranges.begin() + outputs, ranges.end());
  SmallVector<SmallVector<Value>> outputIndices;
  SmallVector<Value> inits;
  if (chunks) {
    // This thread's chunk [lbs, ubs) of the one reduced loop.
    Value chunk = parallel.getInductionVars().front();
    Value size = arith::ConstantIndexOp::create(b, loc, chunks->size);
    lbs.front() = arith::MulIOp::create(b, loc, chunk, size);
    ubs.front() = arith::MinSIOp::create(b, loc, ubs.front(),
                                         arith::AddIOp::create(b, loc, lbs.front(), size));
    outputIndices.push_back({chunk});
    llvm::append_range(outputIndices.back(), ArrayRef(ivs).take_front(outputs));
    inits.push_back(chunks->identity);
  } else {
    for (OpOperand &out : op.getDpsInitsMutable()) {
      outputIndices.push_back(kiln::indicesFor(b, loc, op.getMatchingIndexingMap(&out), ivs));
      Value init = filled[out.getOperandNumber() - op.getNumDpsInputs()];
      inits.push_back(init ? init
                           : memref::LoadOp::create(b, loc, out.get(), outputIndices.back()));
    }
  }
  Block *body = op.getBody();
  scf::LoopNest nest = scf::buildLoopNest(
      b, loc, lbs, ubs, SmallVector<Value>(reduced, one), inits,
      [&](OpBuilder &nb, Location, ValueRange reducedIvs, ValueRange accs) {
        llvm::copy(reducedIvs, ivs.begin() + outputs);
        IRMapping mapping;
        for (OpOperand *in : op.getDpsInputOperands())
          mapping.map(body->getArgument(in->getOperandNumber()),
                      memref::LoadOp::create(
                          nb, loc, in->get(),
                          kiln::indicesFor(nb, loc, op.getMatchingIndexingMap(in), ivs)));
        mapping.map(op.getRegionOutputArgs(), accs);
        for (Operation &bodyOp : body->without_terminator()) {
          if (auto index = dyn_cast<linalg::IndexOp>(bodyOp))
            mapping.map(index.getResult(), ivs[index.getDim()]);
          else
            nb.clone(bodyOp, mapping);
        }
        return llvm::map_to_vector(body->getTerminator()->getOperands(),
                                   [&](Value v) { return mapping.lookupOrDefault(v); });
      });
  SmallVector<Value> stored = chunks ? SmallVector<Value>{chunks->partials}
                                     : SmallVector<Value>(op.getDpsInits());
  for (auto [out, result, indices] : llvm::zip(stored, nest.results, outputIndices))
    memref::StoreOp::create(b, loc, result, out, indices);
  // A run-time length is unrolled too (with a remainder loop).
  std::optional<int64_t> length =
      chunks ? std::optional<int64_t>(chunks->size) : getConstantIntValue(ranges.back());
  if (!length || *length >= kiln::kSerialUnroll)
    (void)loopUnrollByFactor(nest.loops.back(), static_cast<uint64_t>(kiln::kSerialUnroll));
  rewriter.eraseOp(op);
}

/// Threads a chunked thread per output (below) aims for: 64 blocks of
/// 1024, enough to keep the H200's 132 SMs loading.
constexpr int64_t kChunkedThreads = 65536;

/// `op` (parallel loops first, one reduced loop) read across outputs where
/// its outputs are too few for a thread each (a column sum of 4096
/// columns: a block per column read it strided) or its reduction too long,
/// or a long row no block can all-reduce (longRowsWithoutAllReduce):
/// a thread per output and chunk of at most `maxSize` of the reduction,
/// loads still coalesced across the outputs, into partials [chunks,
/// outputs...] filled by the threads; then the partials reduced over the
/// chunks into the output, a generic read across outputs returned for
/// normalising (a thread per output again). Static sizes choose the chunks
/// for kChunkedThreads; run-time ones take chunks of `maxSize`.
linalg::GenericOp buildChunkedThreadPerOutput(IRRewriter &rewriter, linalg::GenericOp op,
                                              const kiln::RowReduction &reduction,
                                              int64_t maxSize) {
  MLIRContext *ctx = op.getContext();
  Location loc = op.getLoc();
  std::optional<int64_t> outputs = staticCount(op, IteratorType::parallel),
                         length = staticCount(op, IteratorType::reduction);
  int64_t size = maxSize;
  std::optional<int64_t> count;
  if (outputs && length) {
    count = std::clamp(llvm::divideCeilSigned(kChunkedThreads, std::max<int64_t>(*outputs, 1)),
                       int64_t{2}, llvm::divideCeilSigned(*length, kiln::kShortReduction));
    count = std::max(*count, llvm::divideCeilSigned(*length, maxSize));
    size = std::max<int64_t>(llvm::divideCeilSigned(*length, *count), 1);
    count = llvm::divideCeilSigned(*length, size);
  } else if (length) {
    count = llvm::divideCeilSigned(*length, size);
  }
  unsigned rank = op.getNumLoops();
  Value out = op.getDpsInits()[0];
  Type accType = getElementTypeOrSelf(out.getType());
  Value acc = op.getRegionOutputArgs()[0];
  // The output's fill moves next to the combine, whose thread per output
  // then starts from it (the chunks do not touch the output).
  Value filled = takeFill(rewriter, op, *op.getDpsInitOperand(0));
  rewriter.setInsertionPoint(op);
  SmallVector<Value> sizes = loopSizes(rewriter, op);
  Value chunkCount =
      count ? arith::ConstantIndexOp::create(rewriter, loc, *count).getResult()
            : arith::CeilDivSIOp::create(rewriter, loc, sizes.back(),
                                         arith::ConstantIndexOp::create(rewriter, loc, size))
                  .getResult();
  SmallVector<int64_t> shape = {count.value_or(ShapedType::kDynamic)};
  llvm::append_range(shape, ArrayRef(op.getStaticLoopRanges()).drop_back());
  SmallVector<Value> dynamicSizes;
  if (!count)
    dynamicSizes.push_back(chunkCount);
  for (auto [range, value] : llvm::zip(ArrayRef(shape).drop_front(), sizes))
    if (ShapedType::isDynamic(range))
      dynamicSizes.push_back(value);
  Value partials =
      memref::AllocOp::create(rewriter, loc, MemRefType::get(shape, accType), dynamicSizes);
  Value identity = kiln::reductionIdentity(rewriter, loc, reduction.kind, accType);

  // The combine reads the partials with the chunk loop last, the outputs'
  // dims contiguous (coalesced across the threads of its outputs).
  SmallVector<AffineExpr> chunkFirst = {getAffineDimExpr(rank - 1, ctx)};
  for (unsigned d = 0; d + 1 < rank; ++d)
    chunkFirst.push_back(getAffineDimExpr(d, ctx));
  SmallVector<AffineMap> combineMaps = {AffineMap::get(rank, 0, chunkFirst, ctx),
                                        op.getMatchingIndexingMap(op.getDpsInitOperand(0))};
  rewriter.setInsertionPointAfter(op);
  if (filled)
    linalg::FillOp::create(rewriter, loc, filled, out);
  linalg::GenericOp combine = kiln::buildCombine(rewriter, loc, reduction, acc, partials, out,
                                                 combineMaps, op.getIteratorTypesArray());
  buildThreadPerOutput(rewriter, op, Chunks{chunkCount, size, partials, identity});
  return combine;
}

/// Splits `op` (parallel loops first, two or more reduction loops) in two:
/// its innermost loop reduced into a temporary of the other loops' ranges,
/// then the temporary reduced over the remaining reduction loops into the
/// output. Returns both, or nothing where `op` is no row reduction over
/// its innermost loop alone.
std::optional<std::pair<linalg::GenericOp, linalg::GenericOp>>
reduceInnermostFirst(IRRewriter &rewriter, linalg::GenericOp op) {
  MLIRContext *ctx = op.getContext();
  Location loc = op.getLoc();
  unsigned rank = op.getNumLoops();
  Value out = op.getDpsInits()[0];
  Type accType = getElementTypeOrSelf(out.getType());
  rewriter.setInsertionPoint(op);

  // Named: a range-for over a view of the returned vector would read it
  // after its destruction.
  SmallVector<Range, 4> ranges =
      cast<linalg::LinalgOp>(op.getOperation()).createLoopRanges(rewriter, loc);
  SmallVector<OpFoldResult> sizes;
  for (const Range &range : ArrayRef(ranges).drop_back())
    sizes.push_back(range.size);
  SmallVector<int64_t> shape;
  SmallVector<Value> dynamicSizes;
  dispatchIndexOpFoldResults(sizes, dynamicSizes, shape);
  Value partials =
      memref::AllocOp::create(rewriter, loc, MemRefType::get(shape, accType), dynamicSizes);

  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  maps.back() = AffineMap::getMultiDimIdentityMap(rank, ctx).getMajorSubMap(rank - 1);
  SmallVector<IteratorType> iterators(rank, IteratorType::parallel);
  iterators.back() = IteratorType::reduction;
  auto first = linalg::GenericOp::create(rewriter, loc, TypeRange{}, op.getDpsInputs(),
                                         ValueRange{partials}, maps, iterators);
  IRMapping unchanged;
  op.getRegion().cloneInto(&first.getRegion(), unchanged);
  std::optional<kiln::RowReduction> reduction = kiln::matchRowReduction(first);
  if (!reduction) {
    rewriter.eraseOp(first);
    rewriter.eraseOp(partials.getDefiningOp());
    return std::nullopt;
  }
  Value acc = first.getBody()->getArguments().back();
  rewriter.setInsertionPoint(first);
  linalg::FillOp::create(rewriter, loc,
                         kiln::reductionIdentity(rewriter, loc, reduction->kind, accType),
                         partials);

  rewriter.setInsertionPoint(op);
  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  SmallVector<AffineMap> combineMaps = {
      AffineMap::getMultiDimIdentityMap(rank - 1, ctx),
      AffineMap::get(rank - 1, 0, outMap.getResults(), ctx)};
  SmallVector<IteratorType> combineIterators(op.getIteratorTypesArray());
  combineIterators.pop_back();
  linalg::GenericOp second = kiln::buildCombine(rewriter, loc, *reduction, acc, partials, out,
                                                combineMaps, combineIterators);
  rewriter.eraseOp(op);
  return std::make_pair(first, second);
}

/// Maps a matmul that the target's tiling passes left (Vulkan's f32, f64
/// and integer ones). A thread per output reads B coalesced across threads
/// and A's row broadcast, whatever the count of outputs, so it stays where
/// K is short. A long or run-time K becomes a reduction of a reassociable
/// sum (as the tiled kernels sum K in tiles), so that no thread sums it
/// alone: over many or run-time outputs, a thread per output and chunk of
/// K here (a block per output would read B strided); over few, the
/// mappings below.
void mapMatmul(IRRewriter &rewriter, linalg::LinalgOp op) {
  int64_t k = op.getStaticLoopRanges().back();
  bool serial = !ShapedType::isDynamic(k) && k <= kMaxSerialMatmul;
  // A short K over run-time sizes: the generic mapping's thread per output.
  if (serial && op.hasDynamicShape())
    return;
  rewriter.setInsertionPoint(op);
  FailureOr<linalg::GenericOp> generic = linalg::generalizeNamedOp(rewriter, op);
  if (failed(generic))
    return;
  Operation *sum = generic->getBody()->getTerminator()->getOperand(0).getDefiningOp();
  if (auto add = dyn_cast_or_null<arith::AddFOp>(sum))
    add.setFastmathAttr(arith::FastMathFlagsAttr::get(
        op->getContext(), add.getFastmath() | arith::FastMathFlags::reassoc));
  if (serial)
    return buildThreadPerOutput(rewriter, *generic);
  if (staticCount(*generic, IteratorType::parallel).value_or(kiln::kMinThreadPerOutputs) <
          kiln::kMinThreadPerOutputs ||
      !readsAcrossOutputs(*generic))
    return;
  if (std::optional<kiln::RowReduction> reduction = kiln::matchRowReduction(*generic))
    buildThreadPerOutput(rewriter, buildChunkedThreadPerOutput(rewriter, *generic, *reduction,
                                                               kMaxSerialMatmul));
}

struct KilnGpuNormalizeReductionsPass
    : kiln::impl::KilnGpuNormalizeReductionsBase<KilnGpuNormalizeReductionsPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<linalg::LinalgOp> matmuls;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op) && op.hasPureBufferSemantics())
        matmuls.push_back(op);
    });
    for (linalg::LinalgOp op : matmuls)
      mapMatmul(rewriter, op);
    SmallVector<linalg::GenericOp> work;
    getOperation().walk([&](linalg::GenericOp op) {
      if (op.hasPureBufferSemantics() && op.getNumReductionLoops() > 0)
        work.push_back(op);
    });
    // Combines of chunks' partials: a thread per output sums their count
    // (at most 65535 for rows of 2^28), never chunked again. Each leaves
    // the set when taken: an op built later at a freed one's address must
    // not pass for it.
    llvm::SmallPtrSet<Operation *, 4> combines;
    while (!work.empty()) {
      linalg::GenericOp op = work.pop_back_val();
      bool combine = combines.erase(op);
      if (SmallVector<ReassociationIndices> runs = adjacentReductionLoops(op);
          !runs.empty() && collapsible(op, runs)) {
        rewriter.setInsertionPoint(op);
        FailureOr<linalg::CollapseResult> collapsed =
            linalg::collapseOpIterationDims(op, runs, rewriter);
        if (succeeded(collapsed)) {
          rewriter.eraseOp(op);
          op = cast<linalg::GenericOp>(collapsed->collapsedOp.getOperation());
        }
      }
      bool serial = threadPerOutput(op);
      op = parallelLoopsFirst(rewriter, op);
      if (serial && parallelLoopsAreFirst(op)) {
        // Built now: the row passes would take the reduction, now
        // innermost, as rows.
        buildThreadPerOutput(rewriter, op);
        continue;
      }
      bool longRows = longRowsWithoutAllReduce(op) && !combine;
      if ((chunked(op) || longRows) && parallelLoopsAreFirst(op))
        if (std::optional<kiln::RowReduction> reduction = kiln::matchRowReduction(op)) {
          linalg::GenericOp partialsCombine =
              buildChunkedThreadPerOutput(rewriter, op, *reduction, kiln::kMaxSerialReduction);
          combines.insert(partialsCombine);
          work.push_back(partialsCombine);
          continue;
        }
      if (op.getNumReductionLoops() > 1 && op.getNumDpsInits() == 1 &&
          (projectedPermutations(op, /*zeros=*/true) || longWindow(op)) &&
          !llvm::is_contained(op.getStaticLoopRanges(), 0))
        if (auto split = reduceInnermostFirst(rewriter, op)) {
          work.push_back(split->first);
          work.push_back(split->second);
        }
    }
  }
};

} // namespace
