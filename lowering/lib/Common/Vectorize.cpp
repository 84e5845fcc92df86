//===- Vectorize.cpp - the kiln-vectorize pass ---------------------------===//
//
// Vectorises kiln's elementwise and last-dim reduction kernels on buffers
// (and, with `outer-reductions`, reductions over outer dims such as a sum
// over dim 0) along their innermost loop: on the CPU, instead of hoping LLVM's loop
// vectoriser sees through memref descriptors and polynomial math (it often
// does not); on GPUs, so that each thread moves 16 bytes at a time.
//
// An operand whose innermost index is the innermost loop (with unit stride)
// is loaded as a vector; one that does not depend on that loop (a row value
// broadcast along it) is loaded once and splatted. Anything else (a
// transpose in the last dim) keeps the scalar lowering; with `gather-reads`
// (the CPU), a body's own load at a data-dependent innermost index is a
// vector gather. The last `size % width` iterations run as a scalar
// linalg.generic on subviews (with `short-tails`, as one shorter vector in
// the vector loop). With `window-reads` (the CPU), an operand read at the
// loop's index plus an offset (a window's tap, `ow + kw`) is an unaligned
// vector load, and one read at a small stride (`2 * ow + kw`) a wider load,
// shuffled.
//
// With `run-time-sizes`, loops of run-time size (a `?` dim) are vectorised
// the same way: the vector loop ends at `size - size % width`, computed at
// run time, and the tail covers the rest (all of a row shorter than one
// vector). Without it (GPU targets, whose flat run-time-size buffers take
// only scalar accesses) such kernels keep the scalar lowering.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/Common/RowReduction.h"
#include "kiln/Lowering/Common/VectorUtils.h"
#include "kiln/Lowering/Common/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"

#include <numeric>

namespace kiln {
#define GEN_PASS_DEF_KILNVECTORIZE
#include "kiln/Lowering/Common/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

using kiln::Access;
using kiln::alignmentAttr;
using kiln::classify;
using kiln::cloneBody;
using kiln::indicesFor;
using kiln::kColumnBlockBytes;
using kiln::kColumnBlockRows;
using kiln::unitInnerStride;

/// An outer reduction's column blocks (kiln::kColumnBlockBytes) are at
/// least 4 wide vectors.
constexpr int64_t kMinColumnBlockVectors = 4;
constexpr int64_t kColumnBlockRowsPerStep = 4;
/// The most iterations of the loops that column blocks run inside their
/// reduction loops (sharedLoops): a block vector of each output row they
/// name stays in registers (4 rows of 4 AVX-512 vectors: 16 of 32).
constexpr int64_t kMaxSharedIterations = 4;

class Vectorizer {
public:
  /// `options` as the pass has them; `threads` counts only with outer
  /// reductions.
  Vectorizer(linalg::GenericOp op, kiln::KilnVectorizeOptions options)
      : op(op), options(options), width(options.vectorWidth) {
    this->options.accumulators = std::max<int64_t>(1, options.accumulators);
    if (!options.outerReductions)
      this->options.threads = 0;
  }

  LogicalResult run() {
    if (!op.hasPureBufferSemantics() || op.getNumDpsInits() != 1)
      return failure();
    for (Value v : op->getOperands()) {
      auto type = cast<MemRefType>(v.getType());
      // Vectors of i1 are bit-packed in memory, where kiln stores a byte per
      // bool: those kernels stay scalar.
      if ((!options.runTimeSizes && !type.hasStaticShape()) || type.getElementTypeBitWidth() < 8)
        return failure();
    }
    ranges = op.getStaticLoopRanges();
    if (ranges.empty())
      return failure();
    last = ranges.size() - 1;
    // A static row shorter than a vector stays scalar; a run-time one may be
    // long, and one shorter than a vector runs as the tail.
    if (!ShapedType::isDynamic(ranges[last]) && ranges[last] < width)
      return failure();
    for (OpOperand *in : op.getDpsInputOperands()) {
      // A flip's tail (kiln::cloneOnSlices) needs a static row.
      auto access = classify(op.getMatchingIndexingMap(in), in->get(), last,
                             kiln::ReadKinds{/*reversed=*/!ShapedType::isDynamic(ranges[last]),
                                             /*windows=*/options.windowReads});
      if (!access)
        return failure();
      accesses.push_back(*access);
    }
    auto iterators = op.getIteratorTypesArray();
    bool outerParallel = llvm::all_of(ArrayRef(iterators).drop_back(), [](auto t) {
      return t == utils::IteratorType::parallel;
    });
    if (!kiln::hasScalarBody(op)) {
      // Row reads: elementwise, no scalar tail (linalg.index would count
      // from the tail's start).
      rowReads = outerParallel && iterators[last] == utils::IteratorType::parallel &&
                 !ShapedType::isDynamic(ranges[last]) &&
                 (options.shortTails || ranges[last] % width == 0) && matchRowReads();
      if (!rowReads)
        return failure();
    }
    if (iterators[last] == utils::IteratorType::parallel) {
      if (outerParallel)
        return vectorizeElementwise();
      return options.outerReductions ? vectorizeOuterReduction() : failure();
    }
    if (!outerParallel)
      return failure();
    return vectorizeRowReduction();
  }

private:
  /// Loads inputs at loop indices `ivs` (innermost one = first lane); with
  /// `aligned`, the innermost one is a multiple of `lanes`.
  void loadInputs(OpBuilder &b, Location loc, ValueRange ivs, IRMapping &mapping,
                  int64_t lanes, bool aligned = true) {
    for (auto [i, in] : llvm::enumerate(op.getDpsInputOperands())) {
      AffineMap map = op.getMatchingIndexingMap(in);
      Type elem = cast<MemRefType>(in->get().getType()).getElementType();
      auto vectorType = VectorType::get({lanes}, elem);
      Value v;
      if (lanes == 0) {
        v = memref::LoadOp::create(b, loc, in->get(), indicesFor(b, loc, map, ivs));
      } else if (accesses[i] == Access::Vector || accesses[i] == Access::Shifted) {
        bool alignedHere = aligned && accesses[i] == Access::Vector;
        v = vector::LoadOp::create(
            b, loc, vectorType, in->get(), indicesFor(b, loc, map, ivs), /*nontemporal=*/false,
            alignedHere ? alignmentAttr(b, in->get(), lanes) : IntegerAttr());
      } else if (accesses[i] == Access::Strided) {
        // Every stride-th of stride * lanes elements from the first lane's;
        // the last stride - 1 masked off, as they may lie past the buffer.
        int64_t stride = kiln::innerCoefficient(map, last);
        auto wide = VectorType::get({stride * lanes}, elem);
        Value mask = vector::ConstantMaskOp::create(
            b, loc, VectorType::get({stride * lanes}, b.getI1Type()),
            ArrayRef<int64_t>{stride * (lanes - 1) + 1});
        Value zeros = arith::ConstantOp::create(b, loc, wide, b.getZeroAttr(wide));
        Value loaded = vector::MaskedLoadOp::create(b, loc, wide, in->get(),
                                                    indicesFor(b, loc, map, ivs), mask, zeros);
        SmallVector<int64_t> every;
        for (int64_t lane = 0; lane < lanes; ++lane)
          every.push_back(lane * stride);
        v = vector::ShuffleOp::create(b, loc, loaded, loaded, every);
      } else if (accesses[i] == Access::Reversed) {
        // The lanes' last iteration reads the lowest address.
        SmallVector<Value> lastLane(ivs);
        lastLane.back() = arith::AddIOp::create(
            b, loc, ivs.back(), arith::ConstantIndexOp::create(b, loc, lanes - 1));
        Value loaded = vector::LoadOp::create(b, loc, vectorType, in->get(),
                                              indicesFor(b, loc, map, lastLane));
        SmallVector<int64_t> reverse(llvm::reverse(llvm::seq<int64_t>(0, lanes)));
        v = vector::ShuffleOp::create(b, loc, loaded, loaded, reverse);
      } else {
        // A row value: splatted, or kept a scalar for cloneRowReads.
        v = memref::LoadOp::create(b, loc, in->get(), indicesFor(b, loc, map, ivs));
        if (!rowReads)
          v = vector::BroadcastOp::create(b, loc, vectorType, v);
      }
      mapping.map(op.getBody()->getArgument(i), v);
    }
  }

  /// Whether the body, which reads buffers itself (an index_select's row
  /// picked by an input), is one cloneRowReads vectorises: arith/math ops,
  /// linalg.index, and memref.loads of outside buffers whose indices are
  /// uniform along the innermost loop except, for a unit-stride buffer,
  /// the innermost one, which may be that loop's linalg.index. Fills
  /// `varying` with the values that vary along that loop.
  bool matchRowReads() {
    Block *body = op.getBody();
    if (!body->getArgument(op.getNumDpsInputs()).use_empty())
      return false;
    for (auto [i, access] : llvm::enumerate(accesses))
      if (access != Access::Splat)
        varying.insert(body->getArgument(i));
    auto isLane = [&](Value v) {
      auto index = v.getDefiningOp<linalg::IndexOp>();
      return index && index.getDim() == static_cast<uint64_t>(last);
    };
    for (Operation &o : body->without_terminator()) {
      if (isa<linalg::IndexOp>(o))
        continue;
      bool anyVarying = false;
      for (OpOperand &use : o.getOpOperands()) {
        // The lane index only as a load's innermost index.
        if (isLane(use.get()) &&
            !(isa<memref::LoadOp>(o) && use.getOperandNumber() == o.getNumOperands() - 1))
          return false;
        anyVarying |= varying.contains(use.get());
      }
      if (auto load = dyn_cast<memref::LoadOp>(o)) {
        ValueRange indices = load.getIndices();
        if (load.getMemRef().getParentBlock() == body ||
            load.getMemRefType().getElementTypeBitWidth() < 8 ||
            llvm::any_of(indices.drop_back(), [&](Value i) { return varying.contains(i); }))
          return false;
        // The innermost index: the lane (a row read in order), or with
        // gather-reads a varying value (a gather).
        bool gather = !indices.empty() && varying.contains(indices.back());
        if (gather && !options.gatherReads)
          return false;
        if (gather || (!indices.empty() && isLane(indices.back()))) {
          if (!unitInnerStride(load.getMemRef()))
            return false;
          varying.insert(load.getResult());
        }
        continue;
      }
      StringRef dialect = o.getDialect() ? o.getDialect()->getNamespace() : "";
      if ((dialect != "arith" && dialect != "math") || o.getNumRegions() != 0)
        return false;
      if (anyVarying)
        for (Value r : o.getResults()) {
          // Index vectors only as a gather's columns (the CPU).
          Type type = r.getType();
          if (!type.isIntOrFloat() && !(options.gatherReads && type.isIndex()))
            return false;
          varying.insert(r);
        }
    }
    return true;
  }

  /// The body of a row-reads generic at loop indices `ivs`, `lanes` wide:
  /// uniform values as scalars (a row's index, clamped once), varying ones
  /// as vectors (uniform operands splatted), the loads along the innermost
  /// loop as vector loads. Returns the yielded vector.
  Value cloneRowReads(OpBuilder &b, Location loc, ValueRange ivs, IRMapping &mapping,
                      int64_t lanes) {
    IRMapping splats;
    auto vectorOf = [&](Value v) -> Value {
      Value mapped = mapping.lookupOrDefault(v);
      if (isa<VectorType>(mapped.getType()))
        return mapped;
      if (Value splat = splats.lookupOrNull(v))
        return splat;
      Value splat =
          vector::BroadcastOp::create(b, loc, VectorType::get({lanes}, mapped.getType()), mapped);
      splats.map(v, splat);
      return splat;
    };
    for (Operation &o : op.getBody()->without_terminator()) {
      if (auto index = dyn_cast<linalg::IndexOp>(o)) {
        mapping.map(index.getResult(), ivs[index.getDim()]);
        continue;
      }
      if (!llvm::any_of(o.getResults(), [&](Value r) { return varying.contains(r); })) {
        b.clone(o, mapping);
        continue;
      }
      if (auto load = dyn_cast<memref::LoadOp>(o)) {
        SmallVector<Value> indices;
        for (Value index : load.getIndices())
          indices.push_back(mapping.lookupOrDefault(index));
        auto type = VectorType::get({lanes}, load.getType());
        if (!isa<VectorType>(indices.back().getType())) {
          mapping.map(load.getResult(),
                      vector::LoadOp::create(b, loc, type, load.getMemRef(), indices));
          continue;
        }
        // A gather: the lanes' offsets from the row's first element.
        Value offsets = indices.back();
        indices.back() = arith::ConstantIndexOp::create(b, loc, 0);
        Value all = vector::ConstantMaskOp::create(
            b, loc, VectorType::get({lanes}, b.getI1Type()), ArrayRef<int64_t>{lanes});
        Value zeros = arith::ConstantOp::create(b, loc, type, b.getZeroAttr(type));
        mapping.map(load.getResult(), vector::GatherOp::create(b, loc, type, load.getMemRef(),
                                                               indices, offsets, all, zeros));
        continue;
      }
      IRMapping vectors;
      for (Value operand : o.getOperands())
        vectors.map(operand, vectorOf(operand));
      kiln::cloneOnVectors(b, loc, o, vectors, lanes);
      for (Value r : o.getResults())
        mapping.map(r, vectors.lookup(r));
    }
    return vectorOf(yielded());
  }

  Value yielded() {
    return op.getBody()->getTerminator()->getOperand(0);
  }

  /// The loop sizes at `b` (constants, or memref.dim of run-time sizes), and
  /// where the vector loop over the innermost one ends: its largest
  /// multiple of its step (`stepSize`, else `width`).
  void computeBounds(OpBuilder &b, Location loc, int64_t stepSize = 0) {
    for (Range range : cast<linalg::LinalgOp>(op.getOperation()).createLoopRanges(b, loc))
      bounds.push_back(getValueOrCreateConstantIndexOp(b, loc, range.size));
    step = arith::ConstantIndexOp::create(b, loc, stepSize ? stepSize : width);
    // Signed: a GPU program computes it on the host, whose size arithmetic
    // is signed (sizes are never negative).
    Value rest = b.createOrFold<arith::RemSIOp>(loc, bounds[last], step);
    vectorEnd = b.createOrFold<arith::SubIOp>(loc, bounds[last], rest);
  }

  /// Runs the remaining iterations as a scalar generic on subviews, which
  /// it returns (null where there are none).
  linalg::GenericOp emitTail(OpBuilder &b, Location loc) {
    std::optional<int64_t> done = getConstantIntValue(vectorEnd);
    if (done && *done == ranges[last])
      return {};
    OpFoldResult start = getAsOpFoldResult(vectorEnd);
    OpFoldResult count =
        getAsOpFoldResult(b.createOrFold<arith::SubIOp>(loc, bounds[last], vectorEnd));
    return kiln::cloneOnSlices(b, loc, op, {{static_cast<unsigned>(last), start, count}});
  }

  /// A linalg.fill of the output's buffer with a value of its element type
  /// just before the op (nothing in between with memory effects but new
  /// buffers'), or null.
  linalg::FillOp fillOfOutput() {
    Value out = op.getDpsInits()[0];
    for (Operation *prev = op->getPrevNode(); prev; prev = prev->getPrevNode()) {
      if (auto fill = dyn_cast<linalg::FillOp>(prev))
        return fill.getDpsInits()[0] == out &&
                       fill.getInputs()[0].getType() ==
                           cast<MemRefType>(out.getType()).getElementType()
                   ? fill
                   : linalg::FillOp();
      if (!isMemoryEffectFree(prev) && !isa<memref::AllocOp, memref::AllocaOp>(prev))
        return {};
    }
    return {};
  }

  /// A static tail as one shorter vector in the vector loop (with
  /// short-tails), or 0: a scalar loop of its own walked every row again (a
  /// pad's 56-wide interior rows: an eighth of the elements one at a time).
  int64_t staticTail() const {
    return options.shortTails && !ShapedType::isDynamic(ranges[last]) ? ranges[last] % width : 0;
  }

  /// `emit(lanes)` at the innermost index `iv` of a vector loop: `width`
  /// lanes, or, with a `tail`, `tail` lanes where `iv` is past the whole
  /// vectors.
  void emitWithTail(OpBuilder &b, Location loc, Value iv, int64_t tail,
                    llvm::function_ref<void(OpBuilder &, Location, int64_t)> emit) {
    if (!tail)
      return emit(b, loc, width);
    Value whole = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, iv, vectorEnd);
    scf::IfOp::create(
        b, loc, whole,
        [&](OpBuilder &tb, Location tl) {
          emit(tb, tl, width);
          scf::YieldOp::create(tb, tl);
        },
        [&](OpBuilder &eb, Location el) {
          emit(eb, el, tail);
          scf::YieldOp::create(eb, el);
        });
  }

  LogicalResult vectorizeElementwise() {
    OpBuilder b(op);
    Location loc = op.getLoc();
    if (op.getMatchingIndexingMap(op.getDpsInitOperand(0)) !=
            AffineMap::getMultiDimIdentityMap(ranges.size(), b.getContext()) ||
        !unitInnerStride(op.getDpsInits()[0]))
      return failure();
    auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); };
    computeBounds(b, loc);
    SmallVector<Value> lbs, ubs(bounds.begin(), bounds.end() - 1), steps;
    for (int64_t d = 0; d < last; ++d) {
      lbs.push_back(c(0));
      steps.push_back(c(1));
    }
    int64_t tail = staticTail();
    lbs.push_back(c(0));
    ubs.push_back(tail ? bounds[last] : vectorEnd);
    steps.push_back(step);
    auto emit = [&](OpBuilder &pb, Location l, ValueRange ivs, int64_t lanes) {
      IRMapping mapping;
      loadInputs(pb, l, ivs, mapping, lanes, /*aligned=*/lanes == width);
      Value result;
      if (rowReads) {
        result = cloneRowReads(pb, l, ivs, mapping, lanes);
      } else {
        cloneBody(pb, l, *op.getBody(), mapping, lanes);
        result = mapping.lookup(yielded());
      }
      Value out = op.getDpsInits()[0];
      vector::StoreOp::create(pb, l, result, out, ivs, /*nontemporal=*/false,
                              lanes == width ? alignmentAttr(pb, out, width) : IntegerAttr());
    };
    scf::ParallelOp::create(
        b, loc, lbs, ubs, steps, [&](OpBuilder &pb, Location l, ValueRange ivs) {
          emitWithTail(pb, l, ivs.back(), tail,
                       [&](OpBuilder &eb, Location el, int64_t lanes) { emit(eb, el, ivs, lanes); });
        });
    if (!tail)
      emitTail(b, loc);
    op.erase();
    return success();
  }

  /// Columns (a multiple of `width`) per task of an outer reduction over
  /// many rows, or 0: such a reduction then runs in blocks of columns, each
  /// taking every row in order and combining it into its block of the
  /// output, which stays in L1. Carried in registers instead, a task's few
  /// vectors of each row were a page apart from the last row's: a TLB miss
  /// and a new stream for the prefetcher per 256 bytes (a 4096^2 f32 sum
  /// over dim 0 at a third of its floor). The blocks are as even as the
  /// vectors allow; their tasks (blocks times the iterations of the outer
  /// parallel loops) as many as the threads at least and a multiple of them
  /// where the columns allow, so that no thread waits on another's extra
  /// block. (Blocks alone a multiple of the threads cut 8 slices of K times
  /// 4096 columns into 1 KiB blocks on 16 threads, where 2 blocks each
  /// gave the 16 tasks.) Static sizes only.
  /// The `shared` loops run inside each block (their rows of the output
  /// held in registers a block vector at a time: 4 rows of 8 KiB blocks
  /// beat 4 rows of 2 KiB, 2.4 against 3.5 ms for 4x4096 @ 4096^2).
  int64_t columnBlock(ArrayRef<utils::IteratorType> iterators, ArrayRef<int64_t> shared) {
    int64_t threads = options.threads;
    if (threads == 0 || ShapedType::isDynamic(ranges[last]))
      return 0;
    int64_t rows = 1, outer = 1;
    for (auto [d, t] : llvm::enumerate(iterators)) {
      if (static_cast<int64_t>(d) == last)
        continue;
      if (ShapedType::isDynamic(ranges[d]))
        return 0;
      if (!llvm::is_contained(shared, static_cast<int64_t>(d)))
        (t == utils::IteratorType::reduction ? rows : outer) *= ranges[d];
    }
    int64_t bytes = std::max<int64_t>(
        1, cast<MemRefType>(op.getDpsInits()[0].getType()).getElementTypeBitWidth() / 8);
    int64_t vectors = ranges[last] / width;
    int64_t maxVectors = std::max<int64_t>(1, kColumnBlockBytes / bytes / width);
    int64_t blocks = llvm::divideCeil(vectors, maxVectors);
    if (outer < threads)
      blocks = llvm::alignTo(std::max<int64_t>(blocks, llvm::divideCeil(threads, outer)),
                             threads / std::gcd(outer, threads));
    int64_t block = llvm::divideCeil(vectors, std::min(blocks, std::max<int64_t>(vectors, 1)));
    return rows >= kColumnBlockRows && block >= kMinColumnBlockVectors ? block * width : 0;
  }

  /// Small static parallel loops besides the innermost (kMaxSharedIterations
  /// together) that an input read along the innermost does not depend on
  /// (the rows of a 4-row A times B: B's rows are the same for each). With
  /// column blocks they run inside the reduction loops, so that each block
  /// of that input comes from memory once for all their iterations, not
  /// once for each of them.
  SmallVector<int64_t> sharedLoops(ArrayRef<utils::IteratorType> iterators) {
    SmallVector<int64_t> shared;
    int64_t iterations = 1;
    for (auto [d, t] : llvm::enumerate(iterators)) {
      if (t != utils::IteratorType::parallel || static_cast<int64_t>(d) == last ||
          ShapedType::isDynamic(ranges[d]) || ranges[d] < 2 ||
          iterations * ranges[d] > kMaxSharedIterations)
        continue;
      bool readOnce = llvm::any_of(op.getDpsInputOperands(), [&](OpOperand *in) {
        AffineMap map = op.getMatchingIndexingMap(in);
        return map.isFunctionOfDim(last) && !map.isFunctionOfDim(d);
      });
      if (readOnce) {
        shared.push_back(d);
        iterations *= ranges[d];
      }
    }
    return shared;
  }

  /// A reduction over outer loops of the innermost (parallel) loop, e.g.
  /// a sum over dim 0: a parallel loop over the parallel loops, vector-wide
  /// along the innermost one, each vector loaded from the output, carried
  /// through the reduction loops in their order and stored back. Each lane
  /// combines in the scalar loops' order, so the body may be anything.
  /// (Before, the reduction loop enclosed a parallel loop over the rest:
  /// one dispatch to the threads per row, each strided through memory.)
  LogicalResult vectorizeOuterReduction() {
    OpBuilder b(op);
    Location loc = op.getLoc();
    MLIRContext *ctx = b.getContext();
    auto iterators = op.getIteratorTypesArray();
    Value out = op.getDpsInits()[0];
    AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
    // The output indexed by the parallel loops in order, the innermost last.
    SmallVector<AffineExpr> parallelDims;
    for (auto [d, t] : llvm::enumerate(iterators))
      if (t == utils::IteratorType::parallel)
        parallelDims.push_back(getAffineDimExpr(d, ctx));
    if (outMap.getResults() != ArrayRef(parallelDims) || !unitInnerStride(out))
      return failure();
    auto c = [&](OpBuilder &ob, int64_t v) { return arith::ConstantIndexOp::create(ob, loc, v); };
    // A static innermost loop long enough takes `accumulators` vectors a
    // step: as many lines of each row in flight, where one vector a step
    // walked the rows a line at a time (a 4096^2 sum over dim 0: 14.6 ->
    // 3.6 ms on a 2-core AVX-512 host). What is left of the loop then
    // goes by one vector a step, and the rest by scalars.
    int64_t narrow = width;
    if (!ShapedType::isDynamic(ranges[last]) && ranges[last] >= width * options.accumulators)
      width *= options.accumulators;
    SmallVector<int64_t> shared = sharedLoops(iterators);
    int64_t block = columnBlock(iterators, shared);
    if (!block)
      shared.clear();
    computeBounds(b, loc);
    Value blockStep = block ? c(b, block) : step;
    // Wide vectors leave their tail to a narrower pass, blocks to one
    // carried in registers.
    int64_t tail = block || width != narrow ? 0 : staticTail();
    // Where the vectors carried in registers cover every column, a fill of
    // the output just before starts them instead of being stored and
    // loaded again (a direct conv's output: a third of its traffic).
    linalg::FillOp fill;
    if (!block && !ShapedType::isDynamic(ranges[last]) && ranges[last] % width == tail)
      fill = fillOfOutput();
    SmallVector<Value> lbs, ubs, steps, reductionLbs, reductionUbs, reductionSteps;
    SmallVector<int64_t> reductionDims, loopDims;
    for (auto [d, t] : llvm::enumerate(iterators)) {
      if (t == utils::IteratorType::reduction) {
        reductionDims.push_back(d);
        reductionLbs.push_back(c(b, 0));
        reductionUbs.push_back(bounds[d]);
        reductionSteps.push_back(c(b, 1));
        continue;
      }
      bool inner = static_cast<int64_t>(d) == last;
      // A unit loop stays out: the canonicalizer would drop it, and the
      // loop's task size with it (a gemv's blocks ran on one thread).
      if (!inner && (ranges[d] == 1 || llvm::is_contained(shared, static_cast<int64_t>(d))))
        continue;
      loopDims.push_back(d);
      lbs.push_back(c(b, 0));
      ubs.push_back(inner && !tail ? vectorEnd : bounds[d]);
      steps.push_back(inner ? blockStep : c(b, 1));
    }
    Value outArg = op.getBody()->getArgument(op.getNumDpsInputs());
    auto loop = scf::ParallelOp::create(
        b, loc, lbs, ubs, steps, [&](OpBuilder &pb, Location l, ValueRange parallelIvs) {
          // Every loop's index, the reduction loops' filled in below.
          SmallVector<Value> ivs(iterators.size(), c(pb, 0));
          for (auto [d, iv] : llvm::zip(loopDims, parallelIvs))
            ivs[d] = iv;
          Type elem = cast<MemRefType>(out.getType()).getElementType();
          VectorType type = VectorType::get({width}, elem);
          IntegerAttr alignment = alignmentAttr(pb, out, width);
          // The body at `at` on the output vector `acc` there, `lanes` wide.
          auto combine = [&](OpBuilder &rb, Location rl, ValueRange at, Value acc,
                             int64_t lanes) {
            IRMapping mapping;
            loadInputs(rb, rl, at, mapping, lanes, /*aligned=*/lanes == width);
            mapping.map(outArg, acc);
            cloneBody(rb, rl, *op.getBody(), mapping, lanes);
            return mapping.lookup(yielded());
          };
          if (block) {
            // Several rows of the innermost reduction loop a step, each
            // block vector loaded and stored once for all of them.
            int64_t inner = reductionDims.back();
            int64_t rowsPerStep =
                !ShapedType::isDynamic(ranges[inner]) && ranges[inner] % kColumnBlockRowsPerStep == 0
                    ? kColumnBlockRowsPerStep
                    : 1;
            SmallVector<Value> blockSteps(reductionSteps);
            blockSteps.back() = c(pb, rowsPerStep);
            // The last block takes the columns left.
            Value columns = pb.createOrFold<arith::MinSIOp>(
                l, c(pb, block), pb.createOrFold<arith::SubIOp>(l, vectorEnd, ivs[last]));
            scf::buildLoopNest(
                pb, l, reductionLbs, reductionUbs, blockSteps,
                [&](OpBuilder &rb, Location rl, ValueRange reductionIvs) {
                  for (auto [d, iv] : llvm::zip(reductionDims, reductionIvs))
                    ivs[d] = iv;
                  scf::ForOp::create(
                      rb, rl, c(rb, 0), columns, c(rb, width), ValueRange{},
                      [&](OpBuilder &fb, Location fl, Value column, ValueRange) {
                        // A block vector of each output row the shared
                        // loops name, all in registers: each step's rows
                        // of the input they share are loaded once for all.
                        SmallVector<SmallVector<Value>> ats(1, ivs);
                        for (int64_t d : shared) {
                          SmallVector<SmallVector<Value>> more;
                          for (const SmallVector<Value> &at : ats)
                            for (int64_t i = 0; i < ranges[d]; ++i) {
                              more.push_back(at);
                              more.back()[d] = c(fb, i);
                            }
                          ats = std::move(more);
                        }
                        SmallVector<SmallVector<Value>> outIdx;
                        SmallVector<Value> accs;
                        for (SmallVector<Value> &at : ats) {
                          at[last] = arith::AddIOp::create(fb, fl, ivs[last], column);
                          outIdx.push_back(indicesFor(fb, fl, outMap, at));
                          accs.push_back(vector::LoadOp::create(fb, fl, type, out, outIdx.back(),
                                                                /*nontemporal=*/false, alignment));
                        }
                        for (int64_t row = 0; row < rowsPerStep; ++row) {
                          Value rowIv = arith::AddIOp::create(fb, fl, ivs[inner], c(fb, row));
                          for (auto [at, acc] : llvm::zip(ats, accs)) {
                            at[inner] = rowIv;
                            acc = combine(fb, fl, at, acc, width);
                          }
                        }
                        for (auto [acc, idx] : llvm::zip(accs, outIdx))
                          vector::StoreOp::create(fb, fl, acc, out, idx, /*nontemporal=*/false,
                                                  alignment);
                        scf::YieldOp::create(fb, fl);
                      });
                });
            return;
          }
          // Carried in registers through the reduction loops.
          auto carried = [&](OpBuilder &cb, Location cl, int64_t lanes) {
            SmallVector<Value> at(ivs); // the reduction loops' filled in below
            SmallVector<Value> outIdx = indicesFor(cb, cl, outMap, at);
            IntegerAttr aligned = lanes == width ? alignment : IntegerAttr();
            auto initType = VectorType::get({lanes}, elem);
            Value init =
                fill ? Value(vector::BroadcastOp::create(cb, cl, initType, fill.getInputs()[0]))
                     : Value(vector::LoadOp::create(cb, cl, initType, out, outIdx,
                                                    /*nontemporal=*/false, aligned));
            scf::LoopNest nest = scf::buildLoopNest(
                cb, cl, reductionLbs, reductionUbs, reductionSteps, ValueRange{init},
                [&](OpBuilder &rb, Location rl, ValueRange reductionIvs, ValueRange acc) {
                  for (auto [d, iv] : llvm::zip(reductionDims, reductionIvs))
                    at[d] = iv;
                  return scf::ValueVector{combine(rb, rl, at, acc[0], lanes)};
                });
            vector::StoreOp::create(cb, cl, nest.results[0], out, outIdx,
                                    /*nontemporal=*/false, aligned);
          };
          emitWithTail(pb, l, ivs[last], tail, carried);
        });
    // A block of columns over every row is a task of its own.
    if (block)
      loop->setAttr(kiln::kMinTaskSizeAttr, b.getIndexAttr(1));
    if (fill)
      fill.erase();
    // The columns past the wide vectors (and blocks) go by one vector a
    // step, carried in registers.
    if (!tail) {
      linalg::GenericOp rest = emitTail(b, loc);
      if (rest && width != narrow) {
        kiln::KilnVectorizeOptions narrower = options;
        narrower.vectorWidth = narrow;
        narrower.accumulators = 1;
        narrower.threads = 0;
        (void)Vectorizer(rest, narrower).run();
      }
    }
    op.erase();
    return success();
  }

  LogicalResult vectorizeRowReduction() {
    int64_t accumulators = options.accumulators;
    OpBuilder b(op);
    Location loc = op.getLoc();
    Block *body = op.getBody();
    std::optional<kiln::RowReduction> reduction = kiln::matchRowReduction(op);
    if (!reduction)
      return failure();
    Operation *combiner = reduction->combiner;
    Value element = reduction->element;
    std::optional<vector::CombiningKind> kind = reduction->kind;

    auto c = [&](OpBuilder &ob, int64_t v) {
      return arith::ConstantIndexOp::create(ob, loc, v);
    };
    computeBounds(b, loc);
    Value out = op.getDpsInits()[0];
    auto row = [&](OpBuilder &rb, Location l, ValueRange outerIvs) {
      // The element value at innermost index `j`, `lanes` wide (0: scalar).
      auto elementAt = [&](OpBuilder &eb, Value j, int64_t lanes) {
        SmallVector<Value> ivs(outerIvs.begin(), outerIvs.end());
        ivs.push_back(j);
        IRMapping mapping;
        loadInputs(eb, l, ivs, mapping, lanes);
        cloneBody(eb, l, *body, mapping, lanes, combiner);
        return mapping.lookup(element);
      };
      Value init = memref::LoadOp::create(rb, l, out, outerIvs);
      // The vector chunks, reduced into `init`. With one accumulator the
      // first chunk starts it, so there must be one (a run-time row may be
      // shorter). With several, each starts at the identity and takes every
      // accumulators-th chunk of the whole groups, so their combines do not
      // wait on each other; the chunks past the groups join the combined one.
      auto chunks = [&](OpBuilder &vb) -> Value {
        Value acc, from;
        if (accumulators == 1) {
          acc = elementAt(vb, c(vb, 0), width);
          from = step;
        } else {
          Value group = c(vb, width * accumulators);
          Value rest = vb.createOrFold<arith::RemSIOp>(l, vectorEnd, group);
          Value groupsEnd = vb.createOrFold<arith::SubIOp>(l, vectorEnd, rest);
          Type elem = element.getType();
          Value identity = vector::BroadcastOp::create(
              vb, l, VectorType::get({width}, elem),
              kiln::reductionIdentity(vb, l, *kind, elem));
          auto groups = scf::ForOp::create(
              vb, l, c(vb, 0), groupsEnd, group,
              SmallVector<Value>(accumulators, identity),
              [&](OpBuilder &lb, Location ll, Value j, ValueRange state) {
                SmallVector<Value> next;
                for (int64_t k = 0; k < accumulators; ++k) {
                  Value at = arith::AddIOp::create(lb, ll, j, c(lb, k * width));
                  next.push_back(vector::makeArithReduction(lb, ll, *kind, state[k],
                                                            elementAt(lb, at, width)));
                }
                scf::YieldOp::create(lb, ll, next);
              });
          acc = groups.getResult(0);
          for (int64_t k = 1; k < accumulators; ++k)
            acc = vector::makeArithReduction(vb, l, *kind, acc, groups.getResult(k));
          from = groupsEnd;
        }
        auto chunkLoop = scf::ForOp::create(
            vb, l, from, vectorEnd, step, ValueRange{acc},
            [&](OpBuilder &lb, Location ll, Value j, ValueRange state) {
              Value next = vector::makeArithReduction(lb, ll, *kind, state[0],
                                                      elementAt(lb, j, width));
              scf::YieldOp::create(lb, ll, next);
            });
        return vector::ReductionOp::create(vb, l, *kind, chunkLoop.getResult(0), init);
      };
      Value total;
      if (!ShapedType::isDynamic(ranges[last]) || accumulators > 1) {
        total = chunks(rb);
      } else {
        Value any = arith::CmpIOp::create(rb, l, arith::CmpIPredicate::ne, vectorEnd,
                                          c(rb, 0));
        total = scf::IfOp::create(
                    rb, l, any,
                    [&](OpBuilder &tb, Location tl) { scf::YieldOp::create(tb, tl, chunks(tb)); },
                    [&](OpBuilder &eb, Location el) { scf::YieldOp::create(eb, el, init); })
                    .getResult(0);
      }
      auto tailLoop = scf::ForOp::create(
          rb, l, vectorEnd, bounds[last], c(rb, 1), ValueRange{total},
          [&](OpBuilder &lb, Location ll, Value j, ValueRange state) {
            Value next = vector::makeArithReduction(lb, ll, *kind, state[0],
                                                    elementAt(lb, j, 0));
            scf::YieldOp::create(lb, ll, next);
          });
      memref::StoreOp::create(rb, l, tailLoop.getResult(0), out, outerIvs);
    };
    if (last == 0) {
      row(b, loc, {});
    } else {
      SmallVector<Value> lbs, ubs(bounds.begin(), bounds.end() - 1), steps;
      for (int64_t d = 0; d < last; ++d) {
        lbs.push_back(c(b, 0));
        steps.push_back(c(b, 1));
      }
      scf::ParallelOp::create(b, loc, lbs, ubs, steps, row);
    }
    op.erase();
    return success();
  }

  linalg::GenericOp op;
  kiln::KilnVectorizeOptions options; // threads 0: no column blocks
  int64_t width;
  bool rowReads = false;         // the body reads buffers (matchRowReads)
  llvm::DenseSet<Value> varying; // with rowReads: values varying along `last`
  SmallVector<int64_t> ranges; // static sizes, kDynamic for run-time ones
  SmallVector<Value> bounds;   // the sizes as values, at the op
  Value step;                  // `width`, the vector loop's step
  Value vectorEnd;             // where the vector loop over the last one ends
  SmallVector<Access> accesses;
  int64_t last = 0;
};

struct KilnVectorizePass
    : kiln::impl::KilnVectorizeBase<KilnVectorizePass> {
  using KilnVectorizeBase::KilnVectorizeBase;
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> generics;
    getOperation().walk([&](linalg::GenericOp g) { generics.push_back(g); });
    for (linalg::GenericOp g : generics)
      (void)Vectorizer(g, kiln::KilnVectorizeOptions{vectorWidth, runTimeSizes, accumulators,
                                               outerReductions, threads, shortTails,
                                               windowReads, gatherReads})
          .run();
  }
};

} // namespace
