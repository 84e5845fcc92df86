//===- CpuScans.cpp - the kiln-cpu-scans pass ----------------------------===//
//
// kiln.cumsum arrives as a serial loop nest (kiln/Lowering/Common/Scan.h)
// that ran on one thread, and a scan over an outer dim walked each column
// down its rows, a row (a page) apart: a 4096^2 f32 cumsum over dim 0 took
// 332 ms. Here the loops over the other dims become parallel. A scan over
// an outer dim also turns inside out: each task takes a vector of columns
// down the rows, its running sums in registers, reading and writing whole
// vectors of each row; the columns past the last whole vector keep the
// scalar loop. A scan along the innermost dim keeps its serial loop per row.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/CPU/Passes.h"
#include "kiln/Lowering/Common/Passes.h"
#include "kiln/Lowering/Common/Scan.h"
#include "kiln/Lowering/Common/VectorUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace kiln {
#define GEN_PASS_DEF_KILNCPUSCANS
#include "kiln/Lowering/CPU/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// Vector registers of running sums a task carries down the rows: as many
/// independent adds in flight (their latency, not memory, bounds one).
constexpr int64_t kVectorsPerStep = 4;

class ScanRewriter {
public:
  ScanRewriter(kiln::Scan scan, int64_t registerBytes)
      : scan(std::move(scan)), registerBytes(registerBytes), b(this->scan.nest),
        loc(this->scan.nest.getLoc()) {}

  void run() {
    int64_t last = scan.outer.size();
    auto bits = [](Value memref) {
      return cast<MemRefType>(memref.getType()).getElementTypeBitWidth();
    };
    // Vectors of i1 are bit-packed in memory, where kiln stores a byte per
    // bool (kiln.cumsum takes none, but the loop nest does not say so).
    bool bytes = bits(scan.load.getMemRef()) >= 8 && bits(scan.store.getMemRef()) >= 8;
    if (scan.dim == last || !bytes) {
      // Each row's scan stays serial; the rows run in parallel.
      buildLoops(/*from=*/c(0), /*lanes=*/0);
    } else {
      int64_t accBytes = scan.loop.getRegionIterArgs()[0].getType().getIntOrFloatBitWidth() / 8;
      int64_t lanes = kVectorsPerStep * registerBytes / std::max<int64_t>(1, accBytes);
      Value columns = size(last), step = c(lanes);
      Value vectorEnd = b.createOrFold<arith::SubIOp>(
          loc, columns, b.createOrFold<arith::RemSIOp>(loc, columns, step));
      std::optional<int64_t> whole = getConstantIntValue(vectorEnd);
      if (whole != 0)
        buildLoops(c(0), lanes, vectorEnd);
      if (!whole || whole != getConstantIntValue(columns))
        buildLoops(vectorEnd, /*lanes=*/0);
    }
    scan.nest.erase();
  }

private:
  Value c(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value size(int64_t d) { return getValueOrCreateConstantIndexOp(b, loc, scan.sizes[d]); }

  /// A parallel loop over the other dims, the innermost one from `from` to
  /// `end` (its size where null), `lanes` a step, each iteration scanning
  /// its columns down the scan dim (`lanes` 0: one column, as scalars).
  void buildLoops(Value from, int64_t lanes, Value end = {}) {
    int64_t rank = scan.sizes.size();
    SmallVector<Value> lbs, ubs, steps;
    for (int64_t d = 0; d < rank; ++d) {
      if (d == scan.dim)
        continue;
      bool inner = d == rank - 1;
      lbs.push_back(inner ? from : c(0));
      ubs.push_back(inner && end ? end : size(d));
      steps.push_back(c(inner && lanes ? lanes : 1));
    }
    // An iteration scans a whole column (or row): as many a task as make
    // the elements of a task of cheap iterations.
    std::optional<int64_t> length = getConstantIntValue(scan.sizes[scan.dim]);
    int64_t perTask = length ? std::max<int64_t>(
                                   1, kiln::kCheapIterationsPerTask /
                                          (std::max<int64_t>(1, *length) * std::max<int64_t>(1, lanes)))
                             : 1;
    kiln::buildTaskLoop(b, loc, lbs, ubs, steps, perTask,
                        [&](OpBuilder &pb, ValueRange ivs) { scanColumns(pb, loc, ivs, lanes); });
  }

  static SmallVector<Value> mapped(IRMapping &mapping, ValueRange values) {
    return llvm::map_to_vector(values, [&](Value v) { return mapping.lookup(v); });
  }

  /// The scan loop at the other dims' indices `ivs`, `lanes` wide.
  void scanColumns(OpBuilder &pb, Location l, ValueRange ivs, int64_t lanes) {
    IRMapping mapping;
    for (auto [outer, iv] : llvm::zip(scan.outer, ivs))
      mapping.map(outer.getInductionVar(), iv);
    Value zero = scan.loop.getInitArgs()[0];
    if (lanes)
      zero = vector::BroadcastOp::create(pb, l, VectorType::get({lanes}, zero.getType()), zero);
    scf::ForOp::create(
        pb, l, scan.loop.getLowerBound(), scan.loop.getUpperBound(), scan.loop.getStep(),
        ValueRange{zero}, [&](OpBuilder &fb, Location fl, Value i, ValueRange acc) {
          mapping.map(scan.loop.getInductionVar(), i);
          mapping.map(scan.loop.getRegionIterArgs()[0], acc[0]);
          for (Operation &op : scan.loop.getBody()->without_terminator()) {
            if (lanes && &op == scan.load.getOperation()) {
              Type elem = scan.load.getType();
              mapping.map(scan.load.getResult(),
                          vector::LoadOp::create(fb, fl, VectorType::get({lanes}, elem),
                                                 scan.load.getMemRef(),
                                                 mapped(mapping, scan.load.getIndices())));
            } else if (lanes && &op == scan.store.getOperation()) {
              vector::StoreOp::create(fb, fl, mapping.lookup(scan.store.getValue()),
                                      scan.store.getMemRef(),
                                      mapped(mapping, scan.store.getIndices()));
            } else {
              kiln::cloneOnVectors(fb, fl, op, mapping, lanes);
            }
          }
          scf::YieldOp::create(fb, fl, mapping.lookup(scan.add->getResult(0)));
        });
  }

  kiln::Scan scan;
  int64_t registerBytes;
  OpBuilder b;
  Location loc;
};

struct KilnCpuScansPass : kiln::impl::KilnCpuScansBase<KilnCpuScansPass> {
  using KilnCpuScansBase::KilnCpuScansBase;

  void runOnOperation() override {
    SmallVector<kiln::Scan> scans;
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.isExternal())
        for (auto loop : func.getBody().front().getOps<scf::ForOp>())
          if (std::optional<kiln::Scan> scan = kiln::matchScan(loop))
            // A single row has nothing to split (one long row would need a
            // blocked scan).
            if (!scan->outer.empty())
              scans.push_back(*scan);
    for (kiln::Scan &scan : scans)
      ScanRewriter(scan, vectorWidth * 4).run();
  }
};

} // namespace
