//===- GpuMapLoops.cpp - the kiln-gpu-map-loops pass ---------------------===//
//
// Prepares a bufferized host function for convert-parallel-loops-to-gpu:
// each top-level parallel loop nest is reordered innermost dim first and
// tiled so that this dim runs on 256 threads of a block (x), the other dims
// becoming blocks (past the third, merged into it while the grid is small;
// the rest run in each thread); serial work
// left at the top level (scans, full reductions, rank-0 arithmetic) is
// wrapped in a one-thread parallel loop, since the host cannot touch device
// memory.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/Common/Tuned.h"
#include "kiln/Lowering/GPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

#include <functional>

namespace kiln {
#define GEN_PASS_DEF_KILNGPUMAPLOOPS
#include "kiln/Lowering/GPU/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// Ops that stay on the host: buffer management, views, constants, and the
/// run-time sizes of a program with `?` dims (memref.dim and index
/// arithmetic on them, comparisons and selects included, which the runtime
/// evaluates: GpuPlan's SizeSteps).
bool staysOnHost(Operation *op) {
  auto sizeLike = [](Type t) { return t.isIndex() || t.isInteger(1); };
  bool sizeArithmetic =
      isa_and_nonnull<arith::ArithDialect>(op->getDialect()) && op->getNumResults() == 1 &&
      sizeLike(op->getResult(0).getType()) &&
      llvm::all_of(op->getOperands(), [&](Value v) {
        Operation *def = v.getDefiningOp();
        return sizeLike(v.getType()) && def && staysOnHost(def);
      });
  // A tensor map (CUDA's TMA: a descriptor, as the pointer a kernel takes)
  // is the runtime's to encode (GpuPlanExtraction).
  return isa<memref::AllocOp, memref::DeallocOp, memref::SubViewOp,
             memref::ExpandShapeOp, memref::CollapseShapeOp,
             memref::ReinterpretCastOp, memref::CastOp, memref::DimOp, func::ReturnOp,
             scf::ParallelOp, gpu::LaunchOp, nvgpu::TmaCreateDescriptorOp,
             UnrealizedConversionCastOp>(op) ||
         op->hasTrait<OpTrait::ConstantLike>() || sizeArithmetic;
}

/// Sinks pure scalar ops computed from the host's sizes into the parallel
/// loops that use them (a mean's element count, converted to a float), or
/// right before the serial ops that do: they run on the device, from the
/// sizes passed to the kernel, each kernel computing its own (two means of
/// one `?` row in serial kernels apart shared one divisor, which the
/// device computed and the host would have passed on).
void sinkScalarsOfSizes(Block &body) {
  std::function<bool(Operation *)> ofSizes = [&](Operation *op) {
    if (staysOnHost(op))
      return !isa<scf::ParallelOp, gpu::LaunchOp>(op);
    return isPure(op) && op->getNumRegions() == 0 &&
           llvm::all_of(op->getResultTypes(), [](Type t) { return t.isIntOrFloat(); }) &&
           llvm::all_of(op->getOperands(), [&](Value v) {
             Operation *def = v.getDefiningOp();
             return def && def->getBlock() == &body && ofSizes(def);
           });
  };
  SmallVector<Operation *> ops;
  for (Operation &op : body)
    if (!staysOnHost(&op) && ofSizes(&op))
      ops.push_back(&op);
  auto topOf = [&](Operation *user) {
    while (user->getBlock() != &body)
      user = user->getParentOp();
    return user;
  };
  for (Operation *op : llvm::reverse(ops)) {
    bool onDevice = llvm::none_of(op->getUsers(), [&](Operation *user) {
      Operation *top = topOf(user);
      return staysOnHost(top) && !isa<scf::ParallelOp, gpu::LaunchOp>(top);
    });
    if (op->use_empty() || !onDevice)
      continue;
    // Right before each user, wherever nested (a loop's initial value, an
    // scf.if's else branch): it dominates that use alone.
    for (OpOperand &use : llvm::make_early_inc_range(op->getUses())) {
      OpBuilder b(use.getOwner());
      use.set(b.clone(*op)->getResult(cast<OpResult>(use.get()).getResultNumber()));
    }
    op->erase();
  }
}

/// Whether host op `op` (pure: a view, a size, a constant) may move above
/// `first`: none of its operands is defined from `first` on.
bool hoistsAbove(Operation *op, Operation *first) {
  return isPure(op) && op->getNumRegions() == 0 && !op->hasTrait<OpTrait::IsTerminator>() &&
         llvm::none_of(op->getOperands(), [&](Value v) {
           Operation *def = v.getDefiningOp();
           return def && def->getBlock() == first->getBlock() &&
                  (def == first || first->isBeforeInBlock(def));
         });
}

/// Moves `ops` into `scf.parallel (0) to (1) { scf.parallel (0) to (1) }`,
/// which maps to one block of one thread.
LogicalResult wrapSerial(ArrayRef<Operation *> ops) {
  llvm::SmallPtrSet<Operation *, 8> group(ops.begin(), ops.end());
  for (Operation *op : ops)
    for (Operation *user : op->getUsers()) {
      // Users nested in a group member move along with it.
      Operation *top = user;
      while (top->getParentOp() && !isa<func::FuncOp>(top->getParentOp()))
        top = top->getParentOp();
      if (!group.contains(top))
        return op->emitError() << "kiln-gpu-map-loops: a value computed on "
                                  "the device is used on the host";
    }
  OpBuilder b(ops.front());
  Location loc = ops.front()->getLoc();
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto outer = scf::ParallelOp::create(b, loc, zero, one, one);
  b.setInsertionPointToStart(outer.getBody());
  auto inner = scf::ParallelOp::create(b, loc, zero, one, one);
  Operation *terminator = inner.getBody()->getTerminator();
  for (Operation *op : ops)
    op->moveBefore(terminator);
  return success();
}

/// The same loop with its dims in reverse order, so that the innermost
/// (contiguous) dim maps to thread x: coalesced, and free of the 64-thread
/// limit of blockDim.z. Dims are also normalised to start 0 and step 1, as
/// the bounds checks of scf::tileParallelLoop assume. An upper bound may be
/// a run-time size: its trip count is then index arithmetic on the host.
/// A grid has three dims: the GPU mapping runs the dims past the third one
/// after the other in each thread. Where the first three make fewer than
/// kMergeBelowBlocks blocks of `blockSize` threads, the next dims merge into
/// the third, one by one until the grid has that many (static sizes): a
/// conv's weights permuted [1, 256, 256, 3, 3] -> [.., 3, 3, 256] ran on 9
/// blocks, 100 us on the H200, 4 us on 2304. The dims left keep work in
/// each thread, which more and smaller blocks would not pay back (a conv's
/// im2col of [32, 3, 7, 7] x 112 x 112 took 2.5 ms longer merged whole into
/// 527K blocks of one element a thread). A loop whose innermost dim is
/// static and shorter than a block first merges the dims after it into that
/// one until it fills a block (a `?` one last): a conv's padded
/// channels-last image put 64 channels on 256 threads (H200: 57 -> 32 us).
/// One whose innermost dim is `?` and whose dims do not fit the grid merges
/// the `?` dims right after it (an image's rows: 56 pixels left 200 of 256
/// threads idle), and static dims past the third into the third while that
/// is shorter than kMergeBelowBlocks (a `?` dim stops it and stays in each
/// thread): the patches of `?` images looped 288 rounds in each thread.
constexpr int64_t kMergeBelowBlocks = 1024;
scf::ParallelOp normalizedInnermostFirst(scf::ParallelOp loop, int64_t blockSize) {
  if (!loop.getInitVals().empty())
    return loop;
  SmallVector<int64_t> lbs, steps;
  for (auto [lb, step] : llvm::zip(loop.getLowerBound(), loop.getStep())) {
    std::optional<int64_t> l = getConstantIntValue(lb), s = getConstantIntValue(step);
    if (!l || !s || *s <= 0)
      return loop;
    lbs.push_back(*l);
    steps.push_back(*s);
  }
  OpBuilder b(loop);
  Location loc = loop.getLoc();
  auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); };
  SmallVector<Value> zeros, counts, ones;
  for (int64_t d = lbs.size() - 1; d >= 0; --d) {
    zeros.push_back(c(0));
    Value ub = loop.getUpperBound()[d];
    if (std::optional<int64_t> u = getConstantIntValue(ub)) {
      counts.push_back(c(std::max<int64_t>(0, (*u - lbs[d] + steps[d] - 1) / steps[d])));
    } else {
      // Sizes are >= 0 and lower bounds 0 in practice; max keeps a count
      // of an empty range at 0 regardless.
      Value span = b.createOrFold<arith::SubIOp>(loc, ub, c(lbs[d]));
      Value count = b.createOrFold<arith::CeilDivSIOp>(loc, span, c(steps[d]));
      counts.push_back(b.createOrFold<arith::MaxSIOp>(loc, count, c(0)));
    }
    ones.push_back(c(1));
  }
  constexpr size_t kGridDims = 3;
  bool staticCounts = llvm::all_of(counts, [](Value c) { return getConstantIntValue(c); });
  // Reversed dims [0, innerEnd) make the first (threads x).
  size_t innerEnd = 1;
  if (std::optional<int64_t> inner = getConstantIntValue(counts[0])) {
    int64_t threads = *inner;
    while (innerEnd < counts.size() && threads < blockSize) {
      std::optional<int64_t> n = getConstantIntValue(counts[innerEnd++]);
      if (!n)
        break;
      threads *= *n;
    }
  } else if (counts.size() > kGridDims) {
    while (innerEnd < counts.size() && !getConstantIntValue(counts[innerEnd]))
      ++innerEnd;
  }
  SmallVector<Value> merged = {counts[0]};
  for (size_t d = 1; d < innerEnd; ++d)
    merged[0] = b.createOrFold<arith::MulIOp>(loc, merged[0], counts[d]);
  merged.append(counts.begin() + innerEnd, counts.end());
  int64_t gridBlocks = 1;
  for (auto [d, count] : llvm::enumerate(ArrayRef<Value>(merged).take_front(kGridDims))) {
    std::optional<int64_t> n = getConstantIntValue(count);
    gridBlocks = n ? gridBlocks * (d ? *n : llvm::divideCeil(*n, blockSize)) : kMergeBelowBlocks;
  }
  // Dims [third, end) of the reversed ones make the third.
  const size_t third = innerEnd + kGridDims - 2;
  size_t end = third + 1;
  // (A `?` third counts as long.)
  int64_t thirdSize = third < counts.size()
                          ? getConstantIntValue(counts[third]).value_or(kMergeBelowBlocks)
                          : kMergeBelowBlocks;
  auto mergesNext = [&] {
    if (end >= counts.size())
      return false;
    if (staticCounts)
      return gridBlocks < kMergeBelowBlocks;
    return getConstantIntValue(counts[end]) && thirdSize < kMergeBelowBlocks;
  };
  while (mergesNext()) {
    int64_t n = *getConstantIntValue(counts[end]);
    gridBlocks *= n;
    thirdSize *= n;
    merged[kGridDims - 1] = b.createOrFold<arith::MulIOp>(loc, merged[kGridDims - 1], counts[end]);
    ++end;
  }
  if (end > third + 1)
    merged.erase(merged.begin() + kGridDims, merged.begin() + (end - innerEnd + 1));
  auto flipped = scf::ParallelOp::create(b, loc, ArrayRef(zeros).take_front(merged.size()),
                                         merged, ArrayRef(ones).take_front(merged.size()));
  Block *body = flipped.getBody();
  b.setInsertionPointToStart(body);
  // The reversed dims' indices; merged ones split, the first fastest.
  SmallVector<Value> ks;
  auto split = [&](Value iv, size_t first, size_t last) {
    for (size_t m = first; m < last; ++m) {
      ks.push_back(arith::RemUIOp::create(b, loc, iv, counts[m]));
      iv = arith::DivUIOp::create(b, loc, iv, counts[m]);
    }
    ks.push_back(iv);
  };
  for (auto [r, iv] : llvm::enumerate(flipped.getInductionVars())) {
    if (r == 0)
      split(iv, 0, innerEnd - 1);
    else if (r + 1 == kGridDims)
      split(iv, third, end - 1);
    else
      ks.push_back(iv);
  }
  for (auto [d, oldIv] : llvm::enumerate(loop.getInductionVars())) {
    Value k = ks[lbs.size() - 1 - d];
    Value iv = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, k, c(steps[d])), c(lbs[d]));
    oldIv.replaceAllUsesWith(iv);
  }
  Operation *terminator = body->getTerminator();
  for (Operation &op :
       llvm::make_early_inc_range(loop.getBody()->without_terminator()))
    op.moveBefore(terminator);
  loop.erase();
  return flipped;
}

/// Caps the blocks of dim `d` (tiled by `step`) of `outer` at `limit`: each
/// block then runs rounds r = 0, 1, ... of the threads' body at block index
/// iv + r * blocks-per-round * step, skipping those past the end. With a
/// run-time upper bound, the rounds are counted on the host: a round is
/// `limit` blocks, and a grid of fewer blocks runs one.
void capBlocks(scf::ParallelOp outer, unsigned d, int64_t step, int64_t limit) {
  Value ubValue = outer.getUpperBound()[d];
  std::optional<int64_t> ub = getConstantIntValue(ubValue);
  auto inners = outer.getBody()->getOps<scf::ParallelOp>();
  if (inners.empty())
    return;
  int64_t blocks = ub ? (*ub + step - 1) / step : 0;
  if (ub && blocks <= limit)
    return;
  scf::ParallelOp inner = *inners.begin();
  OpBuilder b(outer);
  Location loc = outer.getLoc();
  auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); };
  Value rounds, perRoundSpan;
  if (ub) {
    int64_t r = (blocks + limit - 1) / limit;
    int64_t perRound = (blocks + r - 1) / r;
    rounds = c(r);
    perRoundSpan = c(perRound * step);
    outer.getUpperBoundMutable()[d].set(perRoundSpan);
  } else {
    // A span that a 32-bit index (SPIR-V's) holds.
    perRoundSpan = c(std::min(limit, (int64_t(1) << 30) / step) * step);
    rounds = arith::CeilDivSIOp::create(b, loc, ubValue, perRoundSpan);
    outer.getUpperBoundMutable()[d].set(
        arith::MinSIOp::create(b, loc, ubValue, perRoundSpan).getResult());
  }
  Block *body = inner.getBody();
  SmallVector<Operation *> work;
  for (Operation &op : body->without_terminator())
    work.push_back(&op);
  b.setInsertionPointToStart(body);
  auto loop = scf::ForOp::create(b, loc, c(0), rounds, c(1));
  b.setInsertionPointToStart(loop.getBody());
  Value iv = outer.getInductionVars()[d];
  Value shifted = arith::AddIOp::create(
      b, loc, iv, arith::MulIOp::create(b, loc, loop.getInductionVar(), perRoundSpan));
  Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, shifted,
                                        ub ? c(*ub) : ubValue);
  auto guard = scf::IfOp::create(b, loc, inRange, /*withElseRegion=*/false);
  for (Operation *op : work)
    op->moveBefore(guard.thenBlock()->getTerminator());
  iv.replaceUsesWithIf(shifted, [&](OpOperand &use) {
    return guard->isProperAncestor(use.getOwner());
  });
}

/// Clones the constants a device region uses into it, so that they do not
/// become kernel parameters (vector constants could not be passed at all).
void sinkConstants(Operation *deviceOp) {
  llvm::SetVector<Value> above;
  getUsedValuesDefinedAbove(deviceOp->getRegions(), above);
  Block &entry = deviceOp->getRegion(0).front();
  for (Value v : above) {
    Operation *def = v.getDefiningOp();
    if (!def || !def->hasTrait<OpTrait::ConstantLike>() || v.getType().isIndex())
      continue;
    OpBuilder b = OpBuilder::atBlockBegin(&entry);
    Value copy = b.clone(*def)->getResult(0);
    v.replaceUsesWithIf(copy, [&](OpOperand &use) {
      return deviceOp->isProperAncestor(use.getOwner());
    });
  }
}

/// The block size of `loop`'s kernel: its tuned one (key: op
/// "elementwise", the element type it stores, the elements it writes) or
/// the pass option.
int64_t blockSizeOf(ModuleOp module, scf::ParallelOp loop, int64_t fallback) {
  std::string dtype = "none";
  int64_t elements = 1; // per iteration: the lanes of a vector store
  loop.walk([&](Operation *op) {
    Value stored;
    if (auto store = dyn_cast<memref::StoreOp>(op)) {
      stored = store.getMemRef();
    } else if (auto store = dyn_cast<vector::StoreOp>(op)) {
      stored = store.getBase();
      elements = store.getVectorType().getNumElements();
    }
    if (!stored)
      return WalkResult::advance();
    dtype = kiln::tuneDtypeName(cast<MemRefType>(stored.getType()).getElementType());
    return WalkResult::interrupt();
  });
  for (Value ub : loop.getUpperBound())
    elements *= getConstantIntValue(ub).value_or(1);
  auto tuned = kiln::tunedConfig(module, loop, kiln::GpuMapLoopsTunables::tuneSpace(),
                                 "elementwise", {dtype}, {elements});
  return tuned ? kiln::GpuMapLoopsTunables::fromConfig(*tuned).blockSize : fallback;
}

struct KilnGpuMapLoopsPass
    : kiln::impl::KilnGpuMapLoopsBase<KilnGpuMapLoopsPass> {
  using KilnGpuMapLoopsBase::KilnGpuMapLoopsBase;

  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      Block &body = func.getBody().front();
      sinkScalarsOfSizes(body);
      SmallVector<scf::ParallelOp> loops;
      SmallVector<SmallVector<Operation *>> serialGroups(1);
      for (Operation &op : llvm::make_early_inc_range(body)) {
        if (auto loop = dyn_cast<scf::ParallelOp>(op))
          loops.push_back(loop);
        SmallVector<Operation *> &group = serialGroups.back();
        if (staysOnHost(&op)) {
          if (group.empty())
            continue;
          // A view or size the group's later ops read moves above the
          // group rather than split it: the parts would pass values the
          // device computed through the host (a `?` mean's divisor).
          if (hoistsAbove(&op, group.front()))
            op.moveBefore(group.front());
          else
            serialGroups.emplace_back();
          continue;
        }
        group.push_back(&op);
      }
      for (scf::ParallelOp loop : loops) {
        // (Keyed before merging, which may fold static dims into `?` ones.)
        int64_t threads = blockSizeOf(getOperation(), loop, blockSize);
        loop = normalizedInnermostFirst(loop, threads);
        SmallVector<int64_t> tiles(loop.getNumLoops(), 1);
        tiles.front() = threads;
        auto [outer, inner] =
            scf::tileParallelLoop(loop, tiles, /*noMinMaxBounds=*/true);
        int64_t limits[3] = {2147483647, 65535, 65535};
        for (auto [d, limit] : llvm::enumerate(maxGrid))
          if (d < 3)
            limits[d] = limit;
        for (unsigned d = 0; d < std::min(3u, outer.getNumLoops()); ++d)
          capBlocks(outer, d, tiles[d], limits[d]);
      }
      for (ArrayRef<Operation *> group : serialGroups)
        if (!group.empty() && failed(wrapSerial(group)))
          return signalPassFailure();
      for (Operation &op : body)
        if (isa<scf::ParallelOp, gpu::LaunchOp>(op))
          sinkConstants(&op);
    }
  }
};

} // namespace
