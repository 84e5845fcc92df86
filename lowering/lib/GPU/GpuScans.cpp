//===- GpuScans.cpp - the kiln-gpu-scans pass ----------------------------===//
//
// A scan (cumsum) arrives as a serial loop nest: loops over the other dims
// around a loop that carries the running sum along the scan dim. Left alone
// it runs on one GPU thread (3.3 s for 2^26 floats on the H200). Here:
//
// - Short scans (at most kSerialLength elements) keep the serial loop, one
//   thread per row: the other dims become a parallel loop.
// - Longer ones run as a blocked scan over chunks of 8 KiB (2048 32-bit or
//   1024 64-bit elements, 8 or 4 a thread):
//     1. each block sums its segment (one chunk, or several in a row of
//        more than 4096 chunks) into totals[row, segment];
//     2. one block per row scans its totals in place, exclusively, into
//        each segment's offset;
//     3. each block scans its segment's chunks in turn: it loads a chunk
//        into workgroup memory, each thread scans its run of consecutive
//        elements there, the runs' sums are scanned across threads, and the
//        block stores offset + prefix.
//   With one chunk per row only step 3 runs.
//
// Sizes may be known only at run time (programs with `?` dims): the counts
// above are then host arithmetic, and where the choice between the two
// forms (or whether steps 1 and 2 run) depends on the length, both are
// built and the one that does not apply gets an empty grid. Blocks read and write their
//   chunks with consecutive threads at consecutive elements (coalesced
//   along the innermost dim); the padded workgroup layout keeps a thread's
//   consecutive elements in distinct banks. The order of the additions is
//   fixed, so every run gives the same result.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/GPU/BlockLoop.h"
#include "kiln/Lowering/GPU/Passes.h"
#include "kiln/Lowering/Common/Scan.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

namespace kiln {
#define GEN_PASS_DEF_KILNGPUSCANS
#include "kiln/Lowering/GPU/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using kiln::matchScan;
using kiln::Scan;

namespace {

/// Scans this short run serially, one thread per row.
constexpr int64_t kSerialLength = 32;
constexpr int64_t kThreads = 256;
/// A chunk's bytes: what a block loads into workgroup memory.
constexpr int64_t kChunkBytes = 8192;
/// Workgroup memory banks: one padding element per this many.
constexpr int64_t kBanks = 32;
/// Most totals per row: step 2 is one block's serial loop over them (46 us
/// for 32768 on the H200), so rows of more chunks take them in segments.
constexpr int64_t kMaxTotals = 4096;
/// Steps of the scan across a block's threads (log2 kThreads).
constexpr int64_t kThreadScanSteps = 8;
static_assert(int64_t(1) << kThreadScanSteps == kThreads);

/// Builds the kernels of one scan at the nest's place.
class ScanBuilder {
public:
  ScanBuilder(Scan scan, int64_t maxGridX)
      : scan(scan), maxGridX(maxGridX), b(scan.nest), loc(scan.nest.getLoc()), host(b, loc) {
    length = scan.sizes[scan.dim];
    accType = scan.loop.getRegionIterArgs()[0].getType();
  }

  /// Whether the blocked scan may run: rows longer than kSerialLength (or
  /// of run-time length) of 32- or 64-bit sums. Workgroup memory of 8- and
  /// 16-bit values needs capabilities Vulkan devices may lack; those scans
  /// stay one thread per row.
  static bool blockedFits(Scan scan) {
    unsigned bits = scan.loop.getRegionIterArgs()[0].getType().getIntOrFloatBitWidth();
    std::optional<int64_t> length = getConstantIntValue(scan.sizes[scan.dim]);
    return (!length || *length > kSerialLength) && (bits == 32 || bits == 64);
  }

  /// Whether the length is known only at run time: then both forms are
  /// built where the blocked one fits, each launched where it applies.
  static bool lengthAtRunTime(const Scan &scan) {
    return !getConstantIntValue(scan.sizes[scan.dim]);
  }

  /// One thread per row: the loops over the other dims become parallel
  /// (none of them where `besideBlocked` and a run-time length is longer
  /// than kSerialLength: the blocked scan takes those).
  void buildRowPerThread(bool besideBlocked) {
    SmallVector<Value> zeros, sizes, ones;
    for (scf::ForOp loop : scan.outer) {
      zeros.push_back(loop.getLowerBound());
      sizes.push_back(loop.getUpperBound());
      ones.push_back(loop.getStep());
    }
    if (besideBlocked && lengthAtRunTime(scan))
      sizes[0] = kiln::indexValue(b, loc, host.whereNotGreater(sizes[0], length,
                                                         b.getIndexAttr(kSerialLength)));
    auto parallel = scf::ParallelOp::create(b, loc, zeros, sizes, ones);
    OpBuilder pb = OpBuilder::atBlockBegin(parallel.getBody());
    IRMapping mapping;
    for (auto [loop, iv] : llvm::zip(scan.outer, parallel.getInductionVars()))
      mapping.map(loop.getInductionVar(), iv);
    pb.clone(*scan.loop, mapping);
  }

  /// Steps 1 and 2 where a row has several chunks (at run time: their
  /// grids are empty where it does not), then step 3 (at run time with
  /// scan.outer: empty where the rows take a thread each).
  void buildBlocked(bool withRowPerThread) {
    rows = b.getIndexAttr(1);
    for (auto [d, size] : llvm::enumerate(scan.sizes))
      if (static_cast<int64_t>(d) != scan.dim)
        rows = host.mul(rows, size);
    perThread = kChunkBytes / kThreads / (accType.getIntOrFloatBitWidth() / 8);
    chunk = kThreads * perThread;
    chunks = host.ceilDiv(length, b.getIndexAttr(chunk));
    perSegment = host.max(b.getIndexAttr(1), host.div(chunks, b.getIndexAttr(kMaxTotals)));
    segments = host.ceilDiv(chunks, perSegment);
    Value totals;
    std::optional<int64_t> chunkCount = getConstantIntValue(chunks);
    if (!chunkCount || *chunkCount > 1) {
      totals = host.alloc({rows, segments}, accType);
      OpFoldResult one = b.getIndexAttr(1);
      buildChunkTotals(totals, host.whereGreater(host.mul(rows, segments), chunks, one));
      buildTotalsScan(totals, host.whereGreater(rows, chunks, one));
    }
    OpFoldResult items = host.mul(rows, segments);
    if (withRowPerThread)
      items = host.whereGreater(items, length, b.getIndexAttr(kSerialLength));
    buildChunkScans(totals, items);
  }

private:
  Value c(OpBuilder &ob, int64_t v) { return arith::ConstantIndexOp::create(ob, loc, v); }
  Value in(OpBuilder &ob, OpFoldResult v) { return kiln::indexValue(ob, loc, v); }

  /// A launch of kThreads-thread blocks over `items` work items; `body`
  /// builds one item from its thread id, the workgroup buffer of the scan
  /// across threads and the one of a chunk (padded).
  void launchOver(OpFoldResult items,
                  function_ref<void(OpBuilder &, Value, Value, Value, Value)> body) {
    auto workgroup = gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
    SmallVector<Type> shared = {
        MemRefType::get({2, kThreads}, accType, AffineMap(), workgroup),
        MemRefType::get({chunk + chunk / kBanks}, accType, AffineMap(), workgroup)};
    kiln::buildBlockLoop(b, loc, items, kThreads, maxGridX, shared,
                         [&](OpBuilder &ob, Value item, Value tid, ValueRange buffers) {
                           body(ob, item, tid, buffers[0], buffers[1]);
                         });
  }

  /// The indices of element `i` of row `row` of the scanned buffers.
  SmallVector<Value> indices(OpBuilder &ob, Value row, Value i) {
    SmallVector<Value> at(scan.sizes.size());
    for (int64_t d = static_cast<int64_t>(scan.sizes.size()) - 1; d >= 0; --d) {
      if (d == scan.dim) {
        at[d] = i;
        continue;
      }
      Value size = in(ob, scan.sizes[d]);
      at[d] = arith::RemUIOp::create(ob, loc, row, size);
      row = arith::DivUIOp::create(ob, loc, row, size);
    }
    return at;
  }

  /// The scan's start, a zero constant outside the nest.
  Value zero(OpBuilder &) { return scan.loop.getInitArgs()[0]; }

  /// `a + v` with the scan's own addition.
  Value add(OpBuilder &ob, Value a, Value v) {
    IRMapping mapping;
    mapping.map(scan.loop.getRegionIterArgs()[0], a);
    mapping.map(scan.element, v);
    return ob.clone(*scan.add, mapping)->getResult(0);
  }

  /// Clones what `v` computes inside the scan loop from `from` (now `to`).
  Value cloneChain(OpBuilder &ob, Value v, Value from, Value to, IRMapping &mapping) {
    if (v == from)
      return to;
    if (mapping.contains(v))
      return mapping.lookup(v);
    Operation *def = v.getDefiningOp();
    if (!def || def->getBlock() != scan.loop.getBody())
      return v;
    for (Value operand : def->getOperands())
      mapping.map(operand, cloneChain(ob, operand, from, to, mapping));
    return ob.clone(*def, mapping)->getResult(cast<OpResult>(v).getResultNumber());
  }

  /// Element `i` of `row` in the accumulator's type, or zero past the row.
  /// The load is clamped into the row rather than branched around, so that
  /// a thread's loads issue back to back.
  Value elementAt(OpBuilder &ob, Value row, Value i) {
    Value inRange = arith::CmpIOp::create(ob, loc, arith::CmpIPredicate::ult, i, in(ob, length));
    std::optional<int64_t> n = getConstantIntValue(length);
    Value last = n ? c(ob, *n - 1) : Value(arith::SubIOp::create(ob, loc, in(ob, length), c(ob, 1)));
    Value clamped = arith::MinUIOp::create(ob, loc, i, last);
    Value x = memref::LoadOp::create(ob, loc, scan.load.getMemRef(), indices(ob, row, clamped));
    IRMapping mapping;
    Value v = cloneChain(ob, scan.element, scan.load, x, mapping);
    return arith::SelectOp::create(ob, loc, inRange, v, zero(ob));
  }

  /// Where element `k` of a chunk lives in its padded workgroup buffer.
  Value padded(OpBuilder &ob, Value k) {
    return arith::AddIOp::create(ob, loc, k,
                                 arith::DivUIOp::create(ob, loc, k, c(ob, kBanks)));
  }

  /// Stores running sum `sum` as element `i` of `row` of the output.
  void storeAt(OpBuilder &ob, Value row, Value i, Value sum) {
    Value inRange = arith::CmpIOp::create(ob, loc, arith::CmpIPredicate::ult, i, in(ob, length));
    scf::IfOp::create(ob, loc, inRange, [&](OpBuilder &tb, Location l) {
      IRMapping mapping;
      Value stored = cloneChain(tb, scan.store.getValueToStore(), scan.add->getResult(0), sum,
                                mapping);
      memref::StoreOp::create(tb, l, stored, scan.store.getMemRef(), indices(tb, row, i));
      scf::YieldOp::create(tb, l);
    });
  }

  /// The sum of the values of the threads before this one, and of all the
  /// block's threads: a Hillis-Steele scan in workgroup memory, two rows
  /// used in turn so that each step needs one barrier.
  std::pair<Value, Value> blockScan(OpBuilder &ob, Value v, Value tid, Value shared) {
    Value c0 = c(ob, 0), c1 = c(ob, 1);
    memref::StoreOp::create(ob, loc, v, shared, ValueRange{c0, tid});
    gpu::BarrierOp::create(ob, loc);
    Value sum = v;
    for (int64_t s = 0; s < kThreadScanSteps; ++s) {
      Value from = c(ob, s % 2), to = c(ob, 1 - s % 2);
      Value offset = c(ob, int64_t(1) << s);
      Value has = arith::CmpIOp::create(ob, loc, arith::CmpIPredicate::uge, tid, offset);
      auto earlier = scf::IfOp::create(
          ob, loc, has,
          [&](OpBuilder &tb, Location l) {
            Value at = arith::SubIOp::create(tb, l, tid, offset);
            scf::YieldOp::create(tb, l,
                                 Value(memref::LoadOp::create(tb, l, shared, ValueRange{from, at})));
          },
          [&](OpBuilder &eb, Location l) { scf::YieldOp::create(eb, l, zero(eb)); });
      sum = add(ob, earlier.getResult(0), sum);
      memref::StoreOp::create(ob, loc, sum, shared, ValueRange{to, tid});
      gpu::BarrierOp::create(ob, loc);
    }
    Value last = c(ob, kThreadScanSteps % 2);
    Value total = memref::LoadOp::create(ob, loc, shared, ValueRange{last, c(ob, kThreads - 1)});
    Value first = arith::CmpIOp::create(ob, loc, arith::CmpIPredicate::eq, tid, c0);
    auto before = scf::IfOp::create(
        ob, loc, first, [&](OpBuilder &tb, Location l) { scf::YieldOp::create(tb, l, zero(tb)); },
        [&](OpBuilder &eb, Location l) {
          Value at = arith::SubIOp::create(eb, l, tid, c1);
          scf::YieldOp::create(eb, l,
                               Value(memref::LoadOp::create(eb, l, shared, ValueRange{last, at})));
        });
    // Another scan may reuse `shared` next.
    gpu::BarrierOp::create(ob, loc);
    return {before.getResult(0), total};
  }

  /// The inclusive running sums of this thread's perThread values.
  SmallVector<Value> threadScan(OpBuilder &ob, ArrayRef<Value> values) {
    SmallVector<Value> sums = {values.front()};
    for (Value v : values.drop_front())
      sums.push_back(add(ob, sums.back(), v));
    return sums;
  }

  /// The running sum before `segment` of `row`: steps 1 and 2 wrote it
  /// where the row has several chunks (a run-time count is tested).
  Value offsetOf(OpBuilder &ob, Value offsets, Value row, Value segment) {
    auto load = [&](OpBuilder &lb) -> Value {
      return memref::LoadOp::create(lb, loc, offsets, ValueRange{row, segment});
    };
    if (getConstantIntValue(chunks))
      return load(ob);
    Value several = arith::CmpIOp::create(ob, loc, arith::CmpIPredicate::ugt, in(ob, chunks),
                                          c(ob, 1));
    return scf::IfOp::create(
               ob, loc, several,
               [&](OpBuilder &tb, Location l) { scf::YieldOp::create(tb, l, load(tb)); },
               [&](OpBuilder &eb, Location l) { scf::YieldOp::create(eb, l, zero(eb)); })
        .getResult(0);
  }

  /// Item (row, segment) of a rows x segments launch.
  std::pair<Value, Value> rowAndSegment(OpBuilder &ob, Value item) {
    Value n = in(ob, segments);
    return {arith::DivUIOp::create(ob, loc, item, n), arith::RemUIOp::create(ob, loc, item, n)};
  }

  /// This thread's first element in the chunk starting at `chunkStart`.
  Value firstOfThread(OpBuilder &ob, Value chunkStart, Value tid) {
    return arith::AddIOp::create(ob, loc, chunkStart,
                                 arith::MulIOp::create(ob, loc, tid, c(ob, perThread)));
  }

  Value at(OpBuilder &ob, Value first, int64_t j) {
    return arith::AddIOp::create(ob, loc, first, c(ob, j));
  }

  /// A loop over the chunks of `segment`; `body(builder, chunkStart, carried)`
  /// yields the next carried value.
  Value overChunks(OpBuilder &ob, Value segment, Value init,
                   function_ref<Value(OpBuilder &, Value, Value)> body) {
    Value first = arith::MulIOp::create(ob, loc, segment, in(ob, perSegment));
    auto loop = scf::ForOp::create(
        ob, loc, c(ob, 0), in(ob, perSegment), c(ob, 1), ValueRange{init},
        [&](OpBuilder &fb, Location, Value k, ValueRange carried) {
          Value index = arith::AddIOp::create(fb, loc, first, k);
          Value start = arith::MulIOp::create(fb, loc, index, c(fb, chunk));
          scf::YieldOp::create(fb, loc, body(fb, start, carried[0]));
        });
    return loop.getResult(0);
  }

  void buildChunkTotals(Value totals, OpFoldResult items) {
    launchOver(items, [&](OpBuilder &ob, Value item, Value tid, Value shared, Value) {
      auto [row, segment] = rowAndSegment(ob, item);
      Value sum = overChunks(ob, segment, zero(ob), [&](OpBuilder &fb, Value start, Value sum) {
        Value first = arith::AddIOp::create(fb, loc, start, tid);
        for (int64_t j = 0; j < perThread; ++j)
          sum = add(fb, sum, elementAt(fb, row, at(fb, first, j * kThreads)));
        return sum;
      });
      Value total = blockScan(ob, sum, tid, shared).second;
      Value isFirst = arith::CmpIOp::create(ob, loc, arith::CmpIPredicate::eq, tid, c(ob, 0));
      scf::IfOp::create(ob, loc, isFirst, [&](OpBuilder &tb, Location l) {
        memref::StoreOp::create(tb, l, total, totals, ValueRange{row, segment});
        scf::YieldOp::create(tb, l);
      });
    });
  }

  /// totals[row, :] becomes its exclusive running sum, `chunk` at a time.
  void buildTotalsScan(Value totals, OpFoldResult items) {
    launchOver(items, [&](OpBuilder &ob, Value row, Value tid, Value shared, Value) {
      scf::ForOp::create(
          ob, loc, c(ob, 0), in(ob, segments), c(ob, chunk), ValueRange{zero(ob)},
          [&](OpBuilder &fb, Location, Value start, ValueRange carry) {
            Value first = firstOfThread(fb, start, tid);
            Value limit = in(fb, segments);
            SmallVector<Value> values;
            for (int64_t j = 0; j < perThread; ++j) {
              Value i = at(fb, first, j);
              Value inRange = arith::CmpIOp::create(fb, loc, arith::CmpIPredicate::ult, i, limit);
              auto v = scf::IfOp::create(
                  fb, loc, inRange,
                  [&](OpBuilder &tb, Location l) {
                    scf::YieldOp::create(tb, l, Value(memref::LoadOp::create(
                                                    tb, l, totals, ValueRange{row, i})));
                  },
                  [&](OpBuilder &eb, Location l) { scf::YieldOp::create(eb, l, zero(eb)); });
              values.push_back(v.getResult(0));
            }
            SmallVector<Value> sums = threadScan(fb, values);
            auto [before, total] = blockScan(fb, sums.back(), tid, shared);
            Value prefix = add(fb, carry[0], before);
            for (int64_t j = 0; j < perThread; ++j) {
              Value i = at(fb, first, j);
              Value exclusive = j == 0 ? prefix : add(fb, prefix, sums[j - 1]);
              Value inRange = arith::CmpIOp::create(fb, loc, arith::CmpIPredicate::ult, i, limit);
              scf::IfOp::create(fb, loc, inRange, [&](OpBuilder &tb, Location l) {
                memref::StoreOp::create(tb, l, exclusive, totals, ValueRange{row, i});
                scf::YieldOp::create(tb, l);
              });
            }
            scf::YieldOp::create(fb, loc, add(fb, carry[0], total));
          });
    });
  }

  void buildChunkScans(Value offsets, OpFoldResult items) {
    launchOver(items, [&](OpBuilder &ob, Value item, Value tid, Value shared, Value staged) {
      auto [row, segment] = rowAndSegment(ob, item);
      Value offset = offsets ? offsetOf(ob, offsets, row, segment) : zero(ob);
      overChunks(ob, segment, offset, [&](OpBuilder &fb, Value start, Value carried) {
        // Element tid + j * kThreads of the chunk: consecutive threads,
        // consecutive elements.
        auto spread = [&](int64_t j) { return at(fb, tid, j * kThreads); };
        for (int64_t j = 0; j < perThread; ++j)
          memref::StoreOp::create(
              fb, loc, elementAt(fb, row, arith::AddIOp::create(fb, loc, start, spread(j))),
              staged, padded(fb, spread(j)));
        gpu::BarrierOp::create(fb, loc);
        Value first = firstOfThread(fb, c(fb, 0), tid);
        SmallVector<Value> values;
        for (int64_t j = 0; j < perThread; ++j)
          values.push_back(memref::LoadOp::create(fb, loc, staged, padded(fb, at(fb, first, j))));
        SmallVector<Value> sums = threadScan(fb, values);
        auto [before, total] = blockScan(fb, sums.back(), tid, shared);
        before = add(fb, carried, before);
        for (int64_t j = 0; j < perThread; ++j)
          memref::StoreOp::create(fb, loc, add(fb, before, sums[j]), staged,
                                  padded(fb, at(fb, first, j)));
        gpu::BarrierOp::create(fb, loc);
        for (int64_t j = 0; j < perThread; ++j)
          storeAt(fb, row, arith::AddIOp::create(fb, loc, start, spread(j)),
                  memref::LoadOp::create(fb, loc, staged, padded(fb, spread(j))));
        // The next chunk reuses the buffer.
        gpu::BarrierOp::create(fb, loc);
        return add(fb, carried, total);
      });
    });
  }

  Scan scan;
  int64_t maxGridX;
  OpBuilder b;
  Location loc;
  kiln::HostSizes host;
  int64_t perThread, chunk;
  OpFoldResult length, rows, chunks, perSegment, segments;
  Type accType;
};

struct KilnGpuScansPass : kiln::impl::KilnGpuScansBase<KilnGpuScansPass> {
  using KilnGpuScansBase::KilnGpuScansBase;

  void runOnOperation() override {
    SmallVector<Scan> scans;
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.isExternal())
        for (auto loop : func.getBody().front().getOps<scf::ForOp>())
          if (std::optional<Scan> scan = matchScan(loop))
            scans.push_back(*scan);
    for (Scan &scan : scans) {
      bool blocked = ScanBuilder::blockedFits(scan);
      bool rowPerThread =
          !scan.outer.empty() && (!blocked || ScanBuilder::lengthAtRunTime(scan));
      if (!blocked && !rowPerThread)
        continue; // a single short row stays one thread's loop
      ScanBuilder builder(scan, maxGridX);
      if (blocked)
        builder.buildBlocked(rowPerThread);
      if (rowPerThread)
        builder.buildRowPerThread(blocked);
      scan.nest.erase();
    }
  }
};

} // namespace
