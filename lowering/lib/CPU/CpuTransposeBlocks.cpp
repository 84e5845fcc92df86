//===- CpuTransposeBlocks.cpp - the kiln-cpu-transpose-blocks pass -------===//
//
// kiln-vectorize leaves a kernel scalar when an input's innermost dim is not
// the output's (a transpose): each element was then a load one input row
// away from the last, a cache line and a page of its own, so a 4096^2 f32
// transpose took 45 ms where moving its 128 MiB takes about 3. Here such a
// kernel runs in V x V blocks of the two loops involved: V contiguous
// vectors read from the input's rows, transposed in registers, V contiguous
// vectors written to the output's rows; every cache line it touches is used
// whole.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/CPU/Passes.h"
#include "kiln/Lowering/Common/Passes.h"
#include "kiln/Lowering/Common/RowReduction.h"
#include "kiln/Lowering/Common/VectorUtils.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/ADT/bit.h"

namespace kiln {
#define GEN_PASS_DEF_KILNCPUTRANSPOSEBLOCKS
#include "kiln/Lowering/CPU/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// The largest block side: 16 vectors of a transpose are half of AVX-512's
/// registers, and a side of 16 f32 is one cache line.
constexpr int64_t kMaxSide = 16;

class TransposeBlocks {
public:
  TransposeBlocks(linalg::GenericOp op, int64_t registerBytes)
      : op(op), registerBytes(registerBytes) {}

  LogicalResult run() {
    if (!op.hasPureBufferSemantics() || op.getNumDpsInits() != 1 ||
        op.getNumParallelLoops() != op.getNumLoops() || !kiln::hasScalarBody(op) ||
        !op.getBody()->getArguments().back().use_empty())
      return failure();
    for (Value v : op->getOperands())
      if (cast<MemRefType>(v.getType()).getElementTypeBitWidth() < 8)
        return failure(); // kiln stores a byte per bool, vectors of i1 pack bits
    ranges = op.getStaticLoopRanges();
    if (ranges.size() < 2)
      return failure();
    last = ranges.size() - 1;
    Value out = op.getDpsInits()[0];
    if (op.getMatchingIndexingMap(op.getDpsInitOperand(0)) !=
            AffineMap::getMultiDimIdentityMap(ranges.size(), op.getContext()) ||
        !kiln::unitInnerStride(out))
      return failure();
    std::optional<unsigned> across;
    for (OpOperand *in : op.getDpsInputOperands()) {
      AffineMap map = op.getMatchingIndexingMap(in);
      std::optional<kiln::Access> access = kiln::classify(map, in->get(), last);
      accesses.push_back(access);
      if (access)
        continue;
      // Read transposed: along loop K in its innermost dim, L elsewhere.
      auto inner = map.getNumResults() ? dyn_cast<AffineDimExpr>(map.getResults().back())
                                       : nullptr;
      if (!map.isProjectedPermutation() || !inner || !kiln::unitInnerStride(in->get()) ||
          (across && *across != inner.getPosition()))
        return failure();
      across = inner.getPosition();
    }
    if (!across)
      return failure();
    k = *across;
    int64_t outBytes = cast<MemRefType>(out.getType()).getElementTypeBitWidth() / 8;
    auto lanes = static_cast<uint64_t>(registerBytes / outBytes);
    side = std::min<int64_t>(kMaxSide, static_cast<int64_t>(llvm::bit_floor(lanes)));
    for (unsigned d : {k, last})
      if (side < 2 || (!ShapedType::isDynamic(ranges[d]) && ranges[d] < side))
        return failure();
    rewrite();
    return success();
  }

private:
  /// Loads input `i` at loop indices `ivs`: `side` lanes along the last
  /// loop, or one value splatted.
  Value load(OpBuilder &b, Location loc, unsigned i, ValueRange ivs) {
    OpOperand *in = op.getDpsInputOperands()[i];
    SmallVector<Value> idx = kiln::indicesFor(b, loc, op.getMatchingIndexingMap(in), ivs);
    Type elem = cast<MemRefType>(in->get().getType()).getElementType();
    auto type = VectorType::get({side}, elem);
    if (*accesses[i] == kiln::Access::Splat)
      return vector::BroadcastOp::create(b, loc, type,
                                         memref::LoadOp::create(b, loc, in->get(), idx));
    return vector::LoadOp::create(b, loc, type, in->get(), idx, /*nontemporal=*/false,
                                  kiln::alignmentAttr(b, in->get(), side));
  }

  /// One block, its first iteration at `ivs`: the transposed inputs' rows
  /// along K, turned into rows along L, then per index of K the body on
  /// vectors along L and a store.
  void block(OpBuilder &b, Location loc, ValueRange ivs) {
    auto plus = [&](unsigned d, int64_t n) {
      SmallVector<Value> at(ivs);
      at[d] = arith::AddIOp::create(b, loc, ivs[d], arith::ConstantIndexOp::create(b, loc, n));
      return at;
    };
    SmallVector<SmallVector<Value>> transposed(accesses.size());
    for (auto [i, in] : llvm::enumerate(op.getDpsInputOperands())) {
      if (accesses[i])
        continue;
      Type elem = cast<MemRefType>(in->get().getType()).getElementType();
      SmallVector<Value> rows;
      for (int64_t r = 0; r < side; ++r) {
        SmallVector<Value> at = plus(last, r);
        rows.push_back(vector::LoadOp::create(
            b, loc, VectorType::get({side}, elem), in->get(),
            kiln::indicesFor(b, loc, op.getMatchingIndexingMap(in), at),
            /*nontemporal=*/false, kiln::alignmentAttr(b, in->get(), side)));
      }
      transposed[i] = kiln::transposeInRegisters(b, loc, std::move(rows));
    }
    Value out = op.getDpsInits()[0];
    for (int64_t c = 0; c < side; ++c) {
      SmallVector<Value> at = plus(k, c);
      IRMapping mapping;
      for (unsigned i = 0; i < accesses.size(); ++i)
        mapping.map(op.getBody()->getArgument(i),
                    accesses[i] ? load(b, loc, i, at) : transposed[i][c]);
      kiln::cloneBody(b, loc, *op.getBody(), mapping, side);
      vector::StoreOp::create(b, loc, mapping.lookup(op.getBody()->getTerminator()->getOperand(0)),
                              out, at, /*nontemporal=*/false,
                              kiln::alignmentAttr(b, out, side));
    }
  }

  void rewrite() {
    OpBuilder b(op);
    Location loc = op.getLoc();
    auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); };
    SmallVector<Value> bounds;
    for (Range range : cast<linalg::LinalgOp>(op.getOperation()).createLoopRanges(b, loc))
      bounds.push_back(getValueOrCreateConstantIndexOp(b, loc, range.size));
    // A block is `squares` squares along K (a loop of them) by one along L.
    // Two squares: each input row gives a block 128 contiguous bytes, the
    // pair of lines the L2 prefetches together, and one TLB miss of its
    // page serves both (a 4096^2 f32 transpose: 4.7 ms with one, 3.5 with
    // two, 5.8 with four, whose 64 output rows in flight cost more).
    int64_t squares =
        ShapedType::isDynamic(ranges[k]) || ranges[k] >= 2 * side ? 2 : 1;
    Value kStep = c(side * squares), lStep = c(side);
    // Where the blocks end in K and L: their sizes' largest multiples of the
    // steps.
    auto blocksEnd = [&](unsigned d, Value step) {
      return b.createOrFold<arith::SubIOp>(
          loc, bounds[d], b.createOrFold<arith::RemSIOp>(loc, bounds[d], step));
    };
    Value kEnd = blocksEnd(k, kStep), lEnd = blocksEnd(last, lStep);
    SmallVector<Value> lbs(bounds.size(), c(0)), ubs(bounds), steps(bounds.size(), c(1));
    ubs[k] = kEnd;
    ubs[last] = lEnd;
    steps[k] = kStep;
    steps[last] = lStep;
    // A block does squares * side^2 elements' work: as many blocks a task
    // as the elements of a task of cheap iterations.
    int64_t taskSize =
        std::max<int64_t>(1, kiln::kCheapIterationsPerTask / (squares * side * side));
    kiln::buildTaskLoop(b, loc, lbs, ubs, steps, taskSize, [&](OpBuilder &pb, ValueRange ivs) {
      Value zero = arith::ConstantIndexOp::create(pb, loc, 0);
      Value side = arith::ConstantIndexOp::create(pb, loc, this->side);
      scf::ForOp::create(pb, loc, zero, kStep, side, ValueRange{},
                         [&](OpBuilder &fb, Location fl, Value square, ValueRange) {
                           SmallVector<Value> at(ivs);
                           at[k] = arith::AddIOp::create(fb, fl, ivs[k], square);
                           block(fb, fl, at);
                           scf::YieldOp::create(fb, fl);
                         });
    });
    // What is left: the last columns (every K), then the last rows of K
    // (the blocks' columns).
    auto rest = [&](Value end, unsigned d) {
      return getAsOpFoldResult(b.createOrFold<arith::SubIOp>(loc, bounds[d], end));
    };
    auto isZero = [](OpFoldResult f) { return isConstantIntValue(f, 0); };
    OpFoldResult lRest = rest(lEnd, last), kRest = rest(kEnd, k);
    if (!isZero(lRest))
      kiln::cloneOnSlices(b, loc, op, {{last, getAsOpFoldResult(lEnd), lRest}});
    if (!isZero(kRest))
      kiln::cloneOnSlices(b, loc, op,
                          {{k, getAsOpFoldResult(kEnd), kRest},
                           {last, b.getIndexAttr(0), getAsOpFoldResult(lEnd)}});
    op.erase();
  }

  linalg::GenericOp op;
  int64_t registerBytes;
  SmallVector<int64_t> ranges; // static sizes, kDynamic for run-time ones
  // Per input: how it reads along the last loop, or none when transposed.
  SmallVector<std::optional<kiln::Access>> accesses;
  unsigned last = 0; // L, the output's innermost loop
  unsigned k = 0;    // K, the transposed inputs' innermost loop
  int64_t side = 0;  // V
};

struct KilnCpuTransposeBlocksPass
    : kiln::impl::KilnCpuTransposeBlocksBase<KilnCpuTransposeBlocksPass> {
  using KilnCpuTransposeBlocksBase::KilnCpuTransposeBlocksBase;
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> generics;
    getOperation().walk([&](linalg::GenericOp g) { generics.push_back(g); });
    for (linalg::GenericOp g : generics)
      (void)TransposeBlocks(g, vectorWidth * 4).run();
  }
};

} // namespace
