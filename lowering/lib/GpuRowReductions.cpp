//===- GpuRowReductions.cpp - the kiln-gpu-row-reductions pass -----------===//
//
// A reduction over the innermost loop runs one row per block: the block's
// threads stride over the row (coalesced, 16 bytes a load where the layout
// allows), each keeps a partial result, and gpu.all_reduce combines them
// (warp shuffles, then shared memory). The generic mapping would give each
// row to one thread.
//
//===----------------------------------------------------------------------===//
#include "RowReduction.h"
#include "VectorUtils.h"
#include "kiln/Lowering/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"

namespace kiln {
#define GEN_PASS_DEF_KILNGPUROWREDUCTIONS
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

using Kind = vector::CombiningKind;

std::optional<gpu::AllReduceOperation> allReduceOf(Kind kind) {
  using G = gpu::AllReduceOperation;
  switch (kind) {
  case Kind::ADD: return G::ADD;
  case Kind::MUL: return G::MUL;
  case Kind::MAXIMUMF: return G::MAXIMUMF;
  case Kind::MINIMUMF: return G::MINIMUMF;
  case Kind::MAXSI: return G::MAXSI;
  case Kind::MINSI: return G::MINSI;
  case Kind::MAXUI: return G::MAXUI;
  case Kind::MINUI: return G::MINUI;
  case Kind::AND: return G::AND;
  case Kind::OR: return G::OR;
  default: return std::nullopt;
  }
}

/// The value that `kind` leaves unchanged.
Value identity(OpBuilder &b, Location loc, Kind kind, Type type) {
  if (auto ft = dyn_cast<FloatType>(type)) {
    double inf = std::numeric_limits<double>::infinity();
    double v = kind == Kind::MUL ? 1.0 : kind == Kind::MAXIMUMF ? -inf
               : kind == Kind::MINIMUMF ? inf : 0.0;
    return arith::ConstantOp::create(b, loc, ft, b.getFloatAttr(ft, v));
  }
  unsigned w = type.getIntOrFloatBitWidth();
  APInt v = kind == Kind::MUL     ? APInt(w, 1)
            : kind == Kind::MAXSI ? APInt::getSignedMinValue(w)
            : kind == Kind::MINSI ? APInt::getSignedMaxValue(w)
            : kind == Kind::MINUI || kind == Kind::AND ? APInt::getMaxValue(w)
                                                       : APInt(w, 0);
  return arith::ConstantOp::create(b, loc, type, b.getIntegerAttr(type, v));
}

LogicalResult rewrite(linalg::GenericOp op, int64_t blockSize) {
  std::optional<kiln::RowReduction> reduction = kiln::matchRowReduction(op);
  if (!reduction)
    return failure();
  Type accType = reduction->combiner->getResult(0).getType();
  // Shuffles move 32-bit words.
  if (!accType.isF32() && !accType.isInteger(32))
    return failure();
  std::optional<gpu::AllReduceOperation> allReduce = allReduceOf(reduction->kind);
  if (!allReduce)
    return failure();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t rows = 1;
  for (int64_t r : ArrayRef(ranges).drop_back())
    rows *= r;
  int64_t length = ranges.back();
  if (rows == 0 || rows > std::numeric_limits<int32_t>::max())
    return failure();

  OpBuilder b(op);
  Location loc = op.getLoc();
  auto c = [&](OpBuilder &ob, int64_t v) {
    return arith::ConstantIndexOp::create(ob, loc, v);
  };
  auto launch = gpu::LaunchOp::create(b, loc, c(b, rows), c(b, 1), c(b, 1),
                                      c(b, blockSize), c(b, 1), c(b, 1));
  b.setInsertionPointToStart(&launch.getBody().front());
  Value row = launch.getBlockIds().x, tid = launch.getThreadIds().x;
  // The row's outer indices, innermost outer dim fastest.
  SmallVector<Value> outer(ranges.size() - 1);
  Value rest = row;
  for (int64_t d = static_cast<int64_t>(ranges.size()) - 2; d >= 0; --d) {
    outer[d] = arith::RemUIOp::create(b, loc, rest, c(b, ranges[d]));
    rest = arith::DivUIOp::create(b, loc, rest, c(b, ranges[d]));
  }
  Block *body = op.getBody();
  unsigned last = ranges.size() - 1;
  // 16-byte loads when every input is a contiguous, aligned row (or one value
  // per row) and rows are whole vectors.
  constexpr int64_t lanes = 4;
  bool vectorRows = length % lanes == 0;
  SmallVector<kiln::Access> accesses;
  for (OpOperand *in : op.getDpsInputOperands()) {
    std::optional<kiln::Access> access =
        kiln::classify(op.getMatchingIndexingMap(in), in->get(), last);
    auto type = cast<MemRefType>(in->get().getType());
    if (!access || type.getElementTypeBitWidth() < 8 ||
        (*access == kiln::Access::Vector &&
         !kiln::alignmentAttr(b, in->get(), lanes)))
      vectorRows = false;
    accesses.push_back(access.value_or(kiln::Access::Splat));
  }
  int64_t width = vectorRows ? lanes : 0;
  // One step of a thread: the element(s) at innermost index `j`.
  auto elementAt = [&](OpBuilder &lb, Location l, Value j) {
    SmallVector<Value> ivs(outer);
    ivs.push_back(j);
    IRMapping mapping;
    for (auto [i, in] : llvm::enumerate(op.getDpsInputOperands())) {
      SmallVector<Value> idx =
          kiln::indicesFor(lb, l, op.getMatchingIndexingMap(in), ivs);
      Type elem = cast<MemRefType>(in->get().getType()).getElementType();
      Value v;
      if (width == 0)
        v = memref::LoadOp::create(lb, l, in->get(), idx);
      else if (accesses[i] == kiln::Access::Vector)
        v = vector::LoadOp::create(lb, l, VectorType::get({width}, elem),
                                   in->get(), idx, /*nontemporal=*/false,
                                   kiln::alignmentAttr(lb, in->get(), width));
      else
        v = vector::BroadcastOp::create(lb, l, VectorType::get({width}, elem),
                                        memref::LoadOp::create(lb, l, in->get(), idx));
      mapping.map(body->getArgument(i), v);
    }
    kiln::cloneBody(lb, l, *body, mapping, width, reduction->combiner);
    return mapping.lookup(reduction->element);
  };
  Value init = identity(b, loc, reduction->kind, accType);
  if (width)
    init = vector::BroadcastOp::create(b, loc, VectorType::get({width}, accType),
                                       init);
  Value start = width ? Value(arith::MulIOp::create(b, loc, tid, c(b, width))) : tid;
  auto loop = scf::ForOp::create(
      b, loc, start, c(b, length), c(b, blockSize * std::max<int64_t>(width, 1)),
      ValueRange{init}, [&](OpBuilder &lb, Location l, Value j, ValueRange acc) {
        Value next = vector::makeArithReduction(lb, l, reduction->kind, acc[0],
                                                elementAt(lb, l, j));
        scf::YieldOp::create(lb, l, next);
      });
  Value partial = loop.getResult(0);
  if (width)
    partial = vector::ReductionOp::create(b, loc, reduction->kind, partial);
  Value total = gpu::AllReduceOp::create(
      b, loc, partial,
      gpu::AllReduceOperationAttr::get(b.getContext(), *allReduce),
      /*uniform=*/true);
  Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid, c(b, 0));
  scf::IfOp::create(b, loc, first, [&](OpBuilder &ib, Location l) {
    Value out = op.getDpsInits()[0];
    Value init = memref::LoadOp::create(ib, l, out, outer);
    Value result =
        vector::makeArithReduction(ib, l, reduction->kind, total, init);
    memref::StoreOp::create(ib, l, result, out, outer);
    scf::YieldOp::create(ib, l);
  });
  gpu::TerminatorOp::create(b, loc);
  op.erase();
  return success();
}

struct KilnGpuRowReductionsPass
    : kiln::impl::KilnGpuRowReductionsBase<KilnGpuRowReductionsPass> {
  using KilnGpuRowReductionsBase::KilnGpuRowReductionsBase;
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> generics;
    getOperation().walk([&](linalg::GenericOp g) {
      if (!g->getParentOfType<gpu::LaunchOp>())
        generics.push_back(g);
    });
    for (linalg::GenericOp g : generics)
      (void)rewrite(g, blockSize);
  }
};

} // namespace
