//===- GpuArgReductions.cpp - the kiln-gpu-arg-reductions pass -----------===//
//
// argmax/argmin arrive as a linalg.generic that reduces one loop into two
// outputs, the best value so far and its index (kiln-convert-to-linalg's
// ArgToGeneric). The generic mapping gives each output element one thread
// and its serial loop: the argmax over a language model's vocabulary for a
// batch of 4 ran on 4 threads. Here such a reduction runs one block per row,
// its threads striding over the row; few long rows are cut into slices
// whose (value, index) partials a second kernel combines. Partials combine
// by the op's own comparison, the lower index winning a tie, so the result
// is the serial loop's: the first occurrence of the extreme, NaN included.
//
// Rows may be of run-time count (`?` dims other than the reduced one, which
// the op keeps static): their sizes are then host values, and such rows
// take a block each where they are innermost; long ones are sliced as
// the run's row count asks, the combining launch's grid empty where one
// slice a row is all it needs.
//
// Each thread starts from the outputs' initial values (the reduction's
// identity and index 0, which linalg.fill writes first): a partial that saw
// no better element keeps index 0, which is the answer exactly when no
// element beats the identity.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/Common/ArgReduction.h"
#include "kiln/Lowering/GPU/BlockLoop.h"
#include "kiln/Lowering/GPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"

namespace kiln {
#define GEN_PASS_DEF_KILNGPUARGREDUCTIONS
#include "kiln/Lowering/GPU/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

using kiln::ArgReduction;

constexpr int64_t kThreads = 256;
/// Positions a thread loads before it compares them (memory parallelism).
constexpr int64_t kUnroll = 4;
/// Shorter rows keep a thread each; so do rows of up to 255 elements when
/// there are enough of them to fill the GPU (132 SMs x 2048 threads on the
/// H200 is 2^18 threads; a block per row then idles most of its threads).
constexpr int64_t kMinBlockRow = 32;
constexpr int64_t kFullBlockRow = kThreads;
constexpr int64_t kManyRows = 4096;
/// Few long rows are sliced as kiln-gpu-split-reductions slices them.
constexpr int64_t kMinRowsUnsplit = 128;
constexpr int64_t kTargetBlocks = 1024;
constexpr int64_t kMinSliceLength = 16384;

/// Builds the kernels of one arg reduction at its place.
class ArgKernels {
public:
  ArgKernels(ArgReduction arg, int64_t maxGridX)
      : arg(arg), op(arg.op), maxGridX(maxGridX), b(arg.op), loc(arg.op.getLoc()) {
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    length = ranges[arg.dim];
    rows = 1;
    for (auto [d, range] : llvm::enumerate(ranges))
      if (d != arg.dim) {
        outer.push_back(d);
        rows = ShapedType::isDynamic(range) || ShapedType::isDynamic(rows) ? ShapedType::kDynamic
                                                                           : rows * range;
      }
    valueType = arg.best.getType();
    indexType = arg.bestIndex.getType();
    // Workgroup memory of 8- and 16-bit values needs capabilities Vulkan
    // devices may lack: narrow values are kept there widened.
    sharedValueType = valueType;
    if (valueType.getIntOrFloatBitWidth() < 32)
      sharedValueType = isa<FloatType>(valueType) ? Type(b.getF32Type()) : b.getI32Type();
    slices = 1;
    sliceLength = length;
    slicedAtRunTime = ShapedType::isDynamic(rows) && length >= 2 * kMinSliceLength;
    if (!ShapedType::isDynamic(rows) && rows < kMinRowsUnsplit &&
        length >= 2 * kMinSliceLength) {
      int64_t wanted =
          std::min<int64_t>(llvm::divideCeil(kTargetBlocks, rows), length / kMinSliceLength);
      sliceLength = llvm::alignTo(llvm::divideCeil(length, wanted), kThreads * kUnroll);
      slices = llvm::divideCeil(length, sliceLength);
    }
  }

  /// Whether a block per row (or slice) beats a thread per row.
  bool worthBlocks() {
    if (ShapedType::isDynamic(length) || length < kMinBlockRow || rows == 0)
      return false;
    // Threads of a block read consecutive elements only where the reduced
    // loop is the input's innermost dim; elsewhere a thread per row reads
    // consecutive rows, which is coalesced, and wins unless rows are few.
    AffineMap first = op.getMatchingIndexingMap(op.getDpsInputOperand(0));
    bool innermost = first.getNumResults() > 0 &&
                     first.getResults().back() == getAffineDimExpr(arg.dim, b.getContext());
    if (innermost && length >= kFullBlockRow)
      return true;
    if (ShapedType::isDynamic(rows))
      return innermost;
    return rows < kManyRows && (innermost || length >= kFullBlockRow);
  }

  void build() {
    takeInitialValues();
    kiln::HostSizes host(b, loc);
    OpFoldResult rowCount = b.getIndexAttr(1);
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    for (auto [d, range] : llvm::enumerate(ranges))
      loopRanges.push_back(ShapedType::isDynamic(range) ? OpFoldResult(loopSize(d))
                                                        : b.getIndexAttr(range));
    for (unsigned d : outer)
      rowCount = host.mul(rowCount, loopRanges[d]);
    OpFoldResult sliceCount = b.getIndexAttr(slices), sliceLen = b.getIndexAttr(sliceLength);
    if (slicedAtRunTime) { // as the constructor's static plan, on the host
      OpFoldResult granule = b.getIndexAttr(kThreads * kUnroll);
      OpFoldResult wanted =
          host.min(host.ceilDiv(b.getIndexAttr(kTargetBlocks), host.max(rowCount, b.getIndexAttr(1))),
                   b.getIndexAttr(length / kMinSliceLength));
      sliceLen = host.mul(host.ceilDiv(host.ceilDiv(b.getIndexAttr(length), wanted), granule),
                          granule);
      sliceCount = host.ceilDiv(b.getIndexAttr(length), sliceLen);
    }
    bool sliced = slicedAtRunTime || slices > 1;
    Value partialValues, partialIndices;
    if (sliced) {
      partialValues = host.alloc({rowCount, sliceCount}, valueType);
      partialIndices = host.alloc({rowCount, sliceCount}, indexType);
    }
    launch(host.mul(rowCount, sliceCount), [&](OpBuilder &ob, Value item, Value tid, ValueRange shared) {
      Value n = kiln::indexValue(ob, loc, sliceCount), len = kiln::indexValue(ob, loc, sliceLen);
      Value row = arith::DivUIOp::create(ob, loc, item, n);
      Value slice = arith::RemUIOp::create(ob, loc, item, n);
      SmallVector<Value> ivs = rowIvs(ob, row);
      Value begin = arith::MulIOp::create(ob, loc, slice, len);
      Value end = arith::MinUIOp::create(
          ob, loc, arith::AddIOp::create(ob, loc, begin, len), c(ob, length));
      Value value, index;
      std::tie(value, index) = threadPartial(ob, ivs, begin, end, tid);
      std::tie(value, index) = combineBlock(ob, tid, shared, value, index);
      onFirstThread(ob, tid, [&](OpBuilder &tb) {
        auto storePartial = [&](OpBuilder &pb) {
          memref::StoreOp::create(pb, loc, value, partialValues, ValueRange{row, slice});
          memref::StoreOp::create(pb, loc, index, partialIndices, ValueRange{row, slice});
        };
        if (!sliced)
          return storeResult(tb, ivs, value, index);
        if (!slicedAtRunTime)
          return storePartial(tb);
        Value one = arith::CmpIOp::create(tb, loc, arith::CmpIPredicate::eq, n, c(tb, 1));
        scf::IfOp::create(
            tb, loc, one,
            [&](OpBuilder &ib, Location) {
              storeResult(ib, ivs, value, index);
              scf::YieldOp::create(ib, loc);
            },
            [&](OpBuilder &eb, Location) {
              storePartial(eb);
              scf::YieldOp::create(eb, loc);
            });
      });
    });
    if (sliced)
      launch(slicedAtRunTime ? host.whereGreater(rowCount, sliceCount, b.getIndexAttr(1))
                             : rowCount,
             [&](OpBuilder &ob, Value row, Value tid, ValueRange shared) {
        SmallVector<Value> ivs = rowIvs(ob, row);
        Value value, index;
        std::tie(value, index) = initial(ob, ivs);
        auto loop = scf::ForOp::create(
            ob, loc, tid, kiln::indexValue(ob, loc, sliceCount), c(ob, kThreads),
            ValueRange{value, index},
            [&](OpBuilder &fb, Location, Value slice, ValueRange cur) {
              Value v = memref::LoadOp::create(fb, loc, partialValues, ValueRange{row, slice});
              Value i = memref::LoadOp::create(fb, loc, partialIndices, ValueRange{row, slice});
              auto [nv, ni] = kiln::combineArgPartials(fb, arg, cur[0], cur[1], v, i);
              scf::YieldOp::create(fb, loc, ValueRange{nv, ni});
            });
        std::tie(value, index) =
            combineBlock(ob, tid, shared, loop.getResult(0), loop.getResult(1));
        onFirstThread(ob, tid, [&](OpBuilder &tb) { storeResult(tb, ivs, value, index); });
      });
    op.erase();
  }

private:
  Value c(OpBuilder &ob, int64_t v) { return arith::ConstantIndexOp::create(ob, loc, v); }

  void launch(OpFoldResult items, function_ref<void(OpBuilder &, Value, Value, ValueRange)> body) {
    auto workgroup = gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
    SmallVector<Type> shared = {
        MemRefType::get({kThreads}, sharedValueType, AffineMap(), workgroup),
        MemRefType::get({kThreads}, indexType, AffineMap(), workgroup)};
    kiln::buildBlockLoop(b, loc, items, kThreads, maxGridX, shared, body);
  }

  /// The run-time size of loop `d`: the dim of the first operand indexed by it.
  Value loopSize(unsigned d) {
    for (OpOperand &operand : op->getOpOperands()) {
      AffineMap map = op.getMatchingIndexingMap(&operand);
      if (std::optional<unsigned> at = map.getResultPosition(getAffineDimExpr(d, b.getContext())))
        return memref::DimOp::create(b, loc, operand.get(), *at);
    }
    llvm_unreachable("a projected permutation reads every loop of an arg reduction's input");
  }

  /// The outputs' initial values, from the linalg.fill ops just before the
  /// reduction, which the kernels make redundant; or null, to be loaded.
  void takeInitialValues() {
    for (Operation *prev = op->getPrevNode(); auto fill = dyn_cast_or_null<linalg::FillOp>(prev);) {
      prev = prev->getPrevNode();
      for (unsigned k = 0; k < 2; ++k)
        if (fill.getOutputs()[0] == op.getDpsInits()[k] && !init[k]) {
          init[k] = fill.getInputs()[0];
          fill.erase();
          break;
        }
    }
  }

  /// The loop ivs of row `row` (the reduced one left null).
  SmallVector<Value> rowIvs(OpBuilder &ob, Value row) {
    SmallVector<Value> ivs(loopRanges.size());
    for (unsigned d : llvm::reverse(outer)) {
      Value size = kiln::indexValue(ob, loc, loopRanges[d]);
      ivs[d] = arith::RemUIOp::create(ob, loc, row, size);
      row = arith::DivUIOp::create(ob, loc, row, size);
    }
    return ivs;
  }

  std::pair<Value, Value> initial(OpBuilder &ob, ArrayRef<Value> ivs) {
    Value values[2];
    for (unsigned k = 0; k < 2; ++k) {
      OpOperand *out = op.getDpsInitOperand(k);
      values[k] = init[k] ? init[k]
                          : Value(memref::LoadOp::create(ob, loc, out->get(), kiln::operandIndices(op, out, ivs)));
    }
    return {values[0], values[1]};
  }

  void storeResult(OpBuilder &ob, ArrayRef<Value> ivs, Value value, Value index) {
    Value results[2] = {value, index};
    for (unsigned k = 0; k < 2; ++k) {
      OpOperand *out = op.getDpsInitOperand(k);
      memref::StoreOp::create(ob, loc, results[k], out->get(), kiln::operandIndices(op, out, ivs));
    }
  }

  /// This thread's partial over positions begin + tid, begin + tid + kThreads,
  /// ... below `end`: kUnroll at a time, then one at a time.
  std::pair<Value, Value> threadPartial(OpBuilder &ob, SmallVector<Value> ivs, Value begin,
                                        Value end, Value tid) {
    auto [value, index] = initial(ob, ivs);
    SmallVector<Value> best = kiln::buildThreadStrideLoop(
        ob, loc, begin, end, tid, kThreads, kUnroll, {value, index},
        [&](OpBuilder &fb, Value p, ValueRange cur) -> SmallVector<Value> {
          ivs[arg.dim] = p;
          auto [v, i] = kiln::argReductionStep(fb, arg, ivs, cur[0], cur[1]);
          return {v, i};
        });
    return {best[0], best[1]};
  }

  Value toShared(OpBuilder &ob, Value v) {
    if (sharedValueType == valueType)
      return v;
    if (isa<FloatType>(valueType))
      return arith::ExtFOp::create(ob, loc, sharedValueType, v);
    return arith::ExtUIOp::create(ob, loc, sharedValueType, v);
  }

  Value fromShared(OpBuilder &ob, Value v) {
    if (sharedValueType == valueType)
      return v;
    if (isa<FloatType>(valueType))
      return arith::TruncFOp::create(ob, loc, valueType, v);
    return arith::TruncIOp::create(ob, loc, valueType, v);
  }

  /// The block's best partial, on every thread: a tree over workgroup memory.
  std::pair<Value, Value> combineBlock(OpBuilder &ob, Value tid, ValueRange shared, Value value,
                                       Value index) {
    memref::StoreOp::create(ob, loc, toShared(ob, value), shared[0], tid);
    memref::StoreOp::create(ob, loc, index, shared[1], tid);
    gpu::BarrierOp::create(ob, loc);
    for (int64_t half = kThreads / 2; half >= 1; half /= 2) {
      Value active = arith::CmpIOp::create(ob, loc, arith::CmpIPredicate::ult, tid, c(ob, half));
      scf::IfOp::create(ob, loc, active, [&](OpBuilder &tb, Location) {
        Value other = arith::AddIOp::create(tb, loc, tid, c(tb, half));
        Value va = fromShared(tb, memref::LoadOp::create(tb, loc, shared[0], tid));
        Value ia = memref::LoadOp::create(tb, loc, shared[1], tid);
        Value vb = fromShared(tb, memref::LoadOp::create(tb, loc, shared[0], other));
        Value ib = memref::LoadOp::create(tb, loc, shared[1], other);
        auto [v, i] = kiln::combineArgPartials(tb, arg, va, ia, vb, ib);
        memref::StoreOp::create(tb, loc, toShared(tb, v), shared[0], tid);
        memref::StoreOp::create(tb, loc, i, shared[1], tid);
        scf::YieldOp::create(tb, loc);
      });
      gpu::BarrierOp::create(ob, loc);
    }
    Value zero = c(ob, 0);
    Value v = fromShared(ob, memref::LoadOp::create(ob, loc, shared[0], zero));
    Value i = memref::LoadOp::create(ob, loc, shared[1], zero);
    // The block's next item reuses the buffers.
    gpu::BarrierOp::create(ob, loc);
    return {v, i};
  }

  void onFirstThread(OpBuilder &ob, Value tid, function_ref<void(OpBuilder &)> then) {
    Value first = arith::CmpIOp::create(ob, loc, arith::CmpIPredicate::eq, tid, c(ob, 0));
    scf::IfOp::create(ob, loc, first, [&](OpBuilder &tb, Location) {
      then(tb);
      scf::YieldOp::create(tb, loc);
    });
  }

  ArgReduction arg;
  linalg::GenericOp op;
  int64_t maxGridX;
  OpBuilder b;
  Location loc;
  SmallVector<OpFoldResult> loopRanges; // constants or host values
  SmallVector<unsigned> outer;
  int64_t length, rows, slices, sliceLength;
  bool slicedAtRunTime; // rows of run-time count, long enough to slice
  Type valueType, indexType, sharedValueType;
  Value init[2];
};

struct KilnGpuArgReductionsPass
    : kiln::impl::KilnGpuArgReductionsBase<KilnGpuArgReductionsPass> {
  using KilnGpuArgReductionsBase::KilnGpuArgReductionsBase;

  void runOnOperation() override {
    SmallVector<ArgReduction> found;
    getOperation().walk([&](linalg::GenericOp op) {
      if (isa<func::FuncOp>(op->getParentOp()))
        if (std::optional<ArgReduction> arg = kiln::matchArgReduction(op))
          found.push_back(*arg);
    });
    for (const ArgReduction &arg : found) {
      ArgKernels kernels(arg, maxGridX);
      if (kernels.worthBlocks())
        kernels.build();
    }
  }
};

} // namespace
