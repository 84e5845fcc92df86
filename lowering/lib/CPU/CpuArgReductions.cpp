//===- CpuArgReductions.cpp - the kiln-cpu-arg-reductions pass -----------===//
//
// argmax/argmin arrive as a linalg.generic reducing into a best value and its
// index (kiln-convert-to-linalg's ArgToGeneric). linalg-to-loops keeps both
// in their output buffers, so each element waited on a store and a load of
// the one before (LLVM cannot promote them: the temporary's pointer is
// realigned through inttoptr): an argmax of 2^24 floats took 138 ms against
// NumPy's 2.6. Here the rows become an scf.parallel, which
// kiln-cpu-async-parallel-for spreads over threads (a few long rows: their
// slices), and each row a loop that carries interleaved partials (value,
// index) in registers, combined as kiln-gpu-arg-reductions combines its
// threads'.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/CPU/Passes.h"
#include "kiln/Lowering/Common/ArgReduction.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace kiln {
#define GEN_PASS_DEF_KILNCPUARGREDUCTIONS
#include "kiln/Lowering/CPU/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// Independent partials a row keeps, each over every kAccumulators-th
/// position: one best value's compare-select chain per element was the
/// limit (20 cycles an element), not memory. LLVM makes vectors of them (4
/// chains of 8 lanes with AVX2/AVX-512 f32): an argmax of 2^24 f32 took
/// 8.4 ms with 8 partials (one chain), 1.5 ms with 32 and two threads.
/// Rows shorter than twice that keep one, so that many short rows do not
/// pay the combining.
constexpr int64_t kAccumulators = 32;

/// Elements per slice of a long row among fewer than kFewRows (each slice a
/// task of the thread pool), which would leave threads idle: an argmax of
/// 2^24 f32 in one row ran on one thread, of two rows of 2^23 on two at
/// best.
constexpr int64_t kSliceLength = 1 << 16;
constexpr int64_t kFewRows = 8;
constexpr int64_t kMaxSlices = 512;

/// Positions [begin, end) of one row (index values; `length` = end - begin
/// when known) from the best so far `init`: partials over interleaved
/// positions, kept in registers, combined in order before the tail runs
/// on.
std::pair<Value, Value> reduceRun(OpBuilder &b, const kiln::ArgReduction &arg,
                                  SmallVector<Value> ivs, ValueRange init, Value begin, Value end,
                                  int64_t length) {
  Location loc = arg.best.getLoc();
  auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };
  int64_t count = length >= 2 * kAccumulators ? kAccumulators : 1;
  // The main loop's end: begin + (end - begin) rounded down to `count`.
  Value mainEnd = b.createOrFold<arith::SubIOp>(
      loc, end,
      b.createOrFold<arith::RemUIOp>(loc, b.createOrFold<arith::SubIOp>(loc, end, begin),
                                     c(count)));
  SmallVector<Value> partials;
  for (int64_t k = 0; k < count; ++k)
    partials.append(init.begin(), init.end());
  auto main = scf::ForOp::create(
      b, loc, begin, mainEnd, c(count), partials,
      [&](OpBuilder &fb, Location, Value p, ValueRange cur) {
        SmallVector<Value> next;
        for (int64_t k = 0; k < count; ++k) {
          ivs[arg.dim] = arith::AddIOp::create(fb, loc, p,
                                               arith::ConstantIndexOp::create(fb, loc, k));
          auto [value, index] =
              kiln::argReductionStep(fb, arg, ivs, cur[2 * k], cur[2 * k + 1],
                                     /*fromFills=*/true);
          next.append({value, index});
        }
        scf::YieldOp::create(fb, loc, next);
      });
  Value value = main.getResult(0), index = main.getResult(1);
  for (int64_t k = 1; k < count; ++k)
    std::tie(value, index) = kiln::combineArgPartials(b, arg, value, index,
                                                      main.getResult(2 * k),
                                                      main.getResult(2 * k + 1));
  auto tail = scf::ForOp::create(
      b, loc, mainEnd, end, c(1), ValueRange{value, index},
      [&](OpBuilder &fb, Location, Value p, ValueRange best) {
        ivs[arg.dim] = p;
        auto [v, i] = kiln::argReductionStep(fb, arg, ivs, best[0], best[1], /*fromFills=*/true);
        scf::YieldOp::create(fb, loc, ValueRange{v, i});
      });
  return {tail.getResult(0), tail.getResult(1)};
}

/// One row: the outputs' values at `ivs` (the fills ran first) start the
/// reduction, whose result is stored back. `sliced`: the row is cut into
/// slices of about kSliceLength for the threads (an scf.parallel), whose
/// partials (from the fills too) combine in order.
void buildRow(OpBuilder &b, const kiln::ArgReduction &arg, SmallVector<Value> ivs, bool sliced) {
  linalg::GenericOp op = arg.op;
  Location loc = op.getLoc();
  SmallVector<Value> init;
  for (OpOperand &out : op.getDpsInitsMutable())
    init.push_back(memref::LoadOp::create(b, loc, out.get(), kiln::operandIndices(op, &out, ivs)));
  auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };
  const int64_t length = op.getStaticLoopRanges()[arg.dim];
  std::pair<Value, Value> best;
  if (!sliced) {
    best = reduceRun(b, arg, ivs, init, c(0), c(length), length);
  } else {
    // At most kMaxSlices (the partials live on the stack), longer ones for
    // longer rows.
    const int64_t slices = std::min<int64_t>(llvm::divideCeil(length, kSliceLength), kMaxSlices);
    const int64_t perSlice = llvm::divideCeil(length, slices);
    // The partials' buffers on the function's stack frame, once (the row
    // may be in a loop).
    OpBuilder entry = OpBuilder::atBlockBegin(
        &op->getParentOfType<func::FuncOp>().getBody().front());
    SmallVector<Value> partials;
    for (Value v : init)
      partials.push_back(memref::AllocaOp::create(
          entry, loc, MemRefType::get({slices}, v.getType())));
    Value sliceLength = c(perSlice), lengthValue = c(length);
    auto loop = scf::ParallelOp::create(b, loc, ValueRange{c(0)}, ValueRange{c(slices)},
                                        ValueRange{c(1)});
    loop->setAttr(kiln::kMinTaskSizeAttr, b.getIndexAttr(1));
    OpBuilder sb = OpBuilder::atBlockBegin(loop.getBody());
    Value slice = loop.getInductionVars()[0];
    Value begin = arith::MulIOp::create(sb, loc, slice, sliceLength);
    Value end = arith::MinUIOp::create(sb, loc, arith::AddIOp::create(sb, loc, begin, sliceLength),
                                       lengthValue);
    auto [v, i] = reduceRun(sb, arg, ivs, init, begin, end, perSlice);
    memref::StoreOp::create(sb, loc, v, partials[0], slice);
    memref::StoreOp::create(sb, loc, i, partials[1], slice);
    auto combine = scf::ForOp::create(
        b, loc, c(1), c(slices), c(1),
        ValueRange{memref::LoadOp::create(b, loc, partials[0], c(0)),
                   memref::LoadOp::create(b, loc, partials[1], c(0))},
        [&](OpBuilder &fb, Location, Value k, ValueRange cur) {
          auto [v, i] = kiln::combineArgPartials(fb, arg, cur[0], cur[1],
                                                 memref::LoadOp::create(fb, loc, partials[0], k),
                                                 memref::LoadOp::create(fb, loc, partials[1], k));
          scf::YieldOp::create(fb, loc, ValueRange{v, i});
        });
    best = {combine.getResult(0), combine.getResult(1)};
  }
  for (auto [out, result] :
       llvm::zip(op.getDpsInitsMutable(), std::array{best.first, best.second}))
    memref::StoreOp::create(b, loc, result, out.get(), kiln::operandIndices(op, &out, ivs));
}

struct KilnCpuArgReductionsPass
    : kiln::impl::KilnCpuArgReductionsBase<KilnCpuArgReductionsPass> {
  void runOnOperation() override {
    SmallVector<kiln::ArgReduction> found;
    getOperation().walk([&](linalg::GenericOp op) {
      // Static shapes only: a `?` arg reduction keeps linalg's loops.
      if (isa<func::FuncOp>(op->getParentOp()) && !op.hasDynamicShape())
        if (std::optional<kiln::ArgReduction> arg = kiln::matchArgReduction(op))
          found.push_back(*arg);
    });
    for (const kiln::ArgReduction &arg : found) {
      linalg::GenericOp op = arg.op;
      OpBuilder b(op);
      Location loc = op.getLoc();
      SmallVector<int64_t> ranges = op.getStaticLoopRanges();
      SmallVector<Value> lbs, ubs, steps;
      SmallVector<unsigned> outer;
      for (auto [d, range] : llvm::enumerate(ranges))
        if (d != arg.dim) {
          outer.push_back(d);
          lbs.push_back(arith::ConstantIndexOp::create(b, loc, 0));
          ubs.push_back(arith::ConstantIndexOp::create(b, loc, range));
          steps.push_back(arith::ConstantIndexOp::create(b, loc, 1));
        }
      SmallVector<Value> ivs(ranges.size());
      int64_t rows = 1;
      for (unsigned d : outer)
        rows *= ranges[d];
      // Few long rows: one after the other, each in slices across the
      // threads; else the rows across the threads, each on one.
      if (rows < kFewRows && ranges[arg.dim] >= 2 * kSliceLength) {
        scf::buildLoopNest(b, loc, lbs, ubs, steps,
                           [&](OpBuilder &nb, Location, ValueRange rowIvs) {
                             for (auto [d, iv] : llvm::zip(outer, rowIvs))
                               ivs[d] = iv;
                             buildRow(nb, arg, ivs, /*sliced=*/true);
                           });
      } else if (rows == 1) {
        for (unsigned d : outer)
          ivs[d] = arith::ConstantIndexOp::create(b, loc, 0);
        buildRow(b, arg, ivs, /*sliced=*/false);
      } else {
        auto parallel = scf::ParallelOp::create(b, loc, lbs, ubs, steps);
        OpBuilder rb = OpBuilder::atBlockBegin(parallel.getBody());
        for (auto [d, iv] : llvm::zip(outer, parallel.getInductionVars()))
          ivs[d] = iv;
        buildRow(rb, arg, ivs, /*sliced=*/false);
      }
      op.erase();
    }
  }
};

} // namespace
