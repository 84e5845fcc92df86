//===- CpuArgReductions.cpp - the kiln-cpu-arg-reductions pass -----------===//
//
// argmax/argmin arrive as a linalg.generic reducing into a best value and its
// index (kiln-convert-to-linalg's ArgToGeneric). linalg-to-loops keeps both
// in their output buffers, so each element waited on a store and a load of
// the one before (LLVM cannot promote them: the temporary's pointer is
// realigned through inttoptr): an argmax of 2^24 floats took 138 ms against
// NumPy's 2.6. Here the rows become an scf.parallel, which
// kiln-cpu-async-parallel-for spreads over threads, and each row a loop
// that carries 8 interleaved partials (value, index) in registers, combined
// as kiln-gpu-arg-reductions combines its threads'.
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
/// limit (20 cycles an element), not memory. Rows shorter than twice that
/// keep one, so that many short rows do not pay the combining.
constexpr int64_t kAccumulators = 8;

/// One row: the outputs' values at `ivs` (the fills ran first) start the
/// partials over interleaved positions, kept in registers, which combine in
/// order before the tail runs on; the result is stored back.
void buildRow(OpBuilder &b, const kiln::ArgReduction &arg, SmallVector<Value> ivs) {
  linalg::GenericOp op = arg.op;
  Location loc = op.getLoc();
  SmallVector<Value> init;
  for (OpOperand &out : op.getDpsInitsMutable())
    init.push_back(memref::LoadOp::create(b, loc, out.get(), kiln::operandIndices(op, &out, ivs)));
  auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };
  int64_t length = op.getStaticLoopRanges()[arg.dim];
  int64_t count = length >= 2 * kAccumulators ? kAccumulators : 1;
  int64_t mainEnd = length / count * count;
  SmallVector<Value> partials;
  for (int64_t k = 0; k < count; ++k)
    partials.append(init);
  auto main = scf::ForOp::create(
      b, loc, c(0), c(mainEnd), c(count), partials,
      [&](OpBuilder &fb, Location, Value p, ValueRange cur) {
        SmallVector<Value> next;
        for (int64_t k = 0; k < count; ++k) {
          ivs[arg.dim] = arith::AddIOp::create(fb, loc, p,
                                               arith::ConstantIndexOp::create(fb, loc, k));
          auto [value, index] =
              kiln::argReductionStep(fb, arg, ivs, cur[2 * k], cur[2 * k + 1]);
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
      b, loc, c(mainEnd), c(length), c(1), ValueRange{value, index},
      [&](OpBuilder &fb, Location, Value p, ValueRange best) {
        ivs[arg.dim] = p;
        auto [v, i] = kiln::argReductionStep(fb, arg, ivs, best[0], best[1]);
        scf::YieldOp::create(fb, loc, ValueRange{v, i});
      });
  for (auto [out, result] : llvm::zip(op.getDpsInitsMutable(), tail.getResults()))
    memref::StoreOp::create(b, loc, result, out.get(), kiln::operandIndices(op, &out, ivs));
}

struct KilnCpuArgReductionsPass
    : kiln::impl::KilnCpuArgReductionsBase<KilnCpuArgReductionsPass> {
  void runOnOperation() override {
    SmallVector<kiln::ArgReduction> found;
    getOperation().walk([&](linalg::GenericOp op) {
      if (isa<func::FuncOp>(op->getParentOp()))
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
      if (outer.empty()) {
        buildRow(b, arg, ivs);
      } else {
        auto rows = scf::ParallelOp::create(b, loc, lbs, ubs, steps);
        OpBuilder rb = OpBuilder::atBlockBegin(rows.getBody());
        for (auto [d, iv] : llvm::zip(outer, rows.getInductionVars()))
          ivs[d] = iv;
        buildRow(rb, arg, ivs);
      }
      op.erase();
    }
  }
};

} // namespace
