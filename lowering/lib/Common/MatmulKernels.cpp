//===- MatmulKernels.cpp - pieces the GPU matmul kernel builders share ---===//
#include "kiln/Lowering/Common/MatmulKernels.h"
#include "kiln/Lowering/Common/VectorUtils.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;

namespace kiln {

/// The fill of `c` with zeros right before `op`, which the kernel's stores
/// make redundant, or null.
linalg::FillOp zeroFillBefore(linalg::LinalgOp op, Value c) {
  auto fill = dyn_cast_or_null<linalg::FillOp>(op->getPrevNode());
  if (!fill || fill.getDpsInits()[0] != c ||
      !matchPattern(fill.getDpsInputs()[0], m_AnyZeroFloat()))
    return {};
  return fill;
}

/// The output tile of a block: blocks start in launch order (x fastest),
/// and consecutive ones walk down a group of `kGroupRows` tile rows before
/// moving right, so a wave of blocks shares A rows and B columns in L2
/// instead of streaming all of B once per tile row.
std::pair<Value, Value> groupedTileOrder(IndexBuilder &x, gpu::KernelDim3 block,
                                         Value numTilesM, Value numTilesN) {
  return groupedTileOrder(x, x.add(x.mul(block.y, numTilesN), block.x), numTilesM, numTilesN);
}

std::pair<Value, Value> groupedTileOrder(IndexBuilder &x, Value order, Value numTilesM,
                                         Value numTilesN) {
  constexpr int64_t kGroupRows = 8;
  Value groupTiles = x.mul(numTilesN, kGroupRows);
  Value group = x.div(order, groupTiles);
  Value firstRow = x.mul(group, kGroupRows);
  Value rowsLeft = arith::SubIOp::create(x.b, x.loc, numTilesM, firstRow);
  Value rows = arith::MinUIOp::create(x.b, x.loc, rowsLeft, x.c(kGroupRows));
  Value inGroup = arith::RemUIOp::create(x.b, x.loc, order, groupTiles);
  Value row = x.add(firstRow, arith::RemUIOp::create(x.b, x.loc, inGroup, rows));
  Value col = arith::DivUIOp::create(x.b, x.loc, inGroup, rows);
  return {row, col};
}

Value allocPartials(OpBuilder &b, Location loc, Value c, int64_t splits, int64_t rowMultiple,
                    Value launchIf) {
  auto cType = cast<MemRefType>(c.getType());
  const int64_t rank = cType.getRank();
  auto shape = cType.getShape();
  auto type = MemRefType::get({(rank == 3 ? shape[0] : 1) * splits, shape[rank - 2],
                               static_cast<int64_t>(llvm::alignTo(shape.back(), rowMultiple))},
                              b.getF32Type());
  SmallVector<Value> rows;
  if (type.isDynamicDim(1)) {
    IndexBuilder x{b, loc};
    Value m = b.createOrFold<memref::DimOp>(loc, c, rank - 2);
    rows.push_back(launchIf ? b.createOrFold<arith::SelectOp>(loc, launchIf, m, x.c(0)) : m);
  }
  return memref::AllocOp::create(b, loc, type, rows);
}

/// C (+)= the sum of the `splits` parts of `partials` ([batch * splits +
/// part] x M x N rounded up to even, f32), through the fused epilogue: one
/// thread per pair of columns, parts added in order (the same sums on every
/// run); C's rows odd unless `evenRows`.
void sumPartialsKernel(OpBuilder &b, Location loc, Value partials, int64_t splits, Value c,
                       bool evenRows, const MatmulFusion &fused, Value launchIf) {
  constexpr int64_t kThreadsPerBlock = 256;
  auto shape = cast<MemRefType>(partials.getType()).getShape();
  auto cShape = cast<MemRefType>(c.getType()).getShape();
  const int64_t n = cShape.back(), rowPairs = shape[2] / 2;
  IndexBuilder x{b, loc};
  // The rows of C (a constant, or its run-time size: the partial sums'
  // rows are none where the kernel does not launch).
  Value m = b.createOrFold<memref::DimOp>(loc, c, cShape.size() - 2);
  Value pairs = b.createOrFold<arith::MulIOp>(loc, m, x.c(rowPairs));
  auto launch = gpu::LaunchOp::create(
      b, loc,
      gridWhere(b, loc, launchIf,
                b.createOrFold<arith::CeilDivSIOp>(loc, pairs, x.c(kThreadsPerBlock))),
      x.c(shape[0] / splits), x.c(1), x.c(kThreadsPerBlock), x.c(1), x.c(1));
  OpBuilder kb = OpBuilder::atBlockBegin(&launch.getBody().front());
  IndexBuilder t{kb, loc};
  gpu::KernelDim3 block = launch.getBlockIds();
  Value pairIndex = t.add(t.mul(block.x, kThreadsPerBlock), launch.getThreadIds().x);
  Value batch = cast<MemRefType>(c.getType()).getRank() == 3 ? block.y : Value();
  EpilogueInvariants invariants =
      fused.epilogue ? loadEpilogueInvariants(kb, loc, fused.epilogue) : EpilogueInvariants();
  scf::IfOp::create(kb, loc, t.lt(pairIndex, pairs), [&](OpBuilder &ib, Location l) {
    IndexBuilder y{ib, l};
    Value row = y.div(pairIndex, rowPairs), col = y.mul(y.rem(pairIndex, rowPairs), 2);
    auto pairType = VectorType::get({2}, ib.getF32Type());
    IntegerAttr alignment = alignmentAttr(ib, partials, 2);
    Value sum;
    for (int64_t part = 0; part < splits; ++part) {
      Value at = y.add(y.mul(block.y, splits), part);
      Value value = vector::LoadOp::create(ib, l, pairType, partials, ValueRange{at, row, col},
                                           /*nontemporal=*/false, alignment);
      sum = sum ? arith::AddFOp::create(ib, l, sum, value).getResult() : value;
    }
    storeAccumulatorPair(ib, l, c, batch, row, col, sum, m, y.c(n), evenRows,
                         /*accumulate=*/!fused.zeroFill, fused.epilogue, invariants);
    scf::YieldOp::create(ib, l);
  });
  gpu::TerminatorOp::create(kb, loc);
}

void storeAccumulatorPair(OpBuilder &b, Location loc, Value c, Value batch, Value row,
                          Value col, Value pair, Value m, Value n, bool evenRows,
                          bool accumulate, linalg::GenericOp epilogue,
                          const EpilogueInvariants &invariants, int64_t foldedColumns) {
  // Odd rows split the pair: each element is inside the matrix or not on
  // its own.
  const int64_t perStore = evenRows ? 2 : 1;
  // Pairs aligned where a buffer's layout shows it (it may be a view at any
  // offset), or where its rows are of run-time length, which evenRows says
  // the host checked even, in a layout of the buffer's own (every stride a
  // multiple of the row).
  auto pairAlignment = [&](OpBuilder &ab, Value buffer) {
    if (IntegerAttr known = alignmentAttr(ab, buffer, perStore))
      return known;
    auto type = cast<MemRefType>(buffer.getType());
    bool runTimeRows = type.getRank() > 0 && type.isDynamicDim(type.getRank() - 1);
    return perStore == 2 && runTimeRows && type.getLayout().isIdentity()
               ? ab.getI64IntegerAttr(2 * type.getElementTypeBitWidth() / 8)
               : IntegerAttr();
  };
  IndexBuilder x{b, loc};
  for (int64_t e0 = 0; e0 < 2; e0 += perStore) {
    Value first = x.add(col, e0);
    Value part = perStore == 2 ? pair
                               : vector::ExtractStridedSliceOp::create(
                                     b, loc, pair, ArrayRef<int64_t>{e0}, ArrayRef<int64_t>{1},
                                     ArrayRef<int64_t>{1}).getResult();
    Value inside = x.both(x.lt(row, m), x.lt(first, n));
    scf::IfOp::create(b, loc, inside, [&](OpBuilder &tb, Location l) {
      IndexBuilder y{tb, l};
      SmallVector<Value> at = columnIndices(y, c, batch, row, first, foldedColumns);
      Value sum = part;
      IntegerAttr cAlignment = pairAlignment(tb, c);
      if (accumulate)
        sum = arith::AddFOp::create(tb, l,
                                    vector::LoadOp::create(tb, l, part.getType(), c, at,
                                                           /*nontemporal=*/false, cAlignment),
                                    part);
      if (!epilogue) {
        vector::StoreOp::create(tb, l, sum, c, at, /*nontemporal=*/false, cAlignment);
      } else if (perStore == 2) {
        storeThroughEpilogue(tb, l, epilogue, c, sum, at, /*width=*/2, invariants,
                             pairAlignment(tb, epilogue.getDpsInits()[0]));
      } else {
        storeThroughEpilogue(tb, l, epilogue, c,
                             vector::ExtractOp::create(tb, l, sum, ArrayRef<int64_t>{0}), at,
                             /*width=*/0, invariants);
      }
      scf::YieldOp::create(tb, l);
    });
  }
}

bool rowsOnlyAtRunTime(linalg::LinalgOp op) {
  if (!isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op))
    return false;
  auto a = cast<MemRefType>(op.getDpsInputs()[0].getType());
  auto bm = cast<MemRefType>(op.getDpsInputs()[1].getType());
  auto c = cast<MemRefType>(op.getDpsInits()[0].getType());
  const int64_t rows = c.getRank() - 2;
  auto onlyRows = [&](MemRefType t) {
    for (int64_t d = 0; d < t.getRank(); ++d)
      if (t.isDynamicDim(d) != (d == rows))
        return false;
    return true;
  };
  return a.getRank() == c.getRank() && onlyRows(a) && onlyRows(c) && bm.hasStaticShape();
}

Value rowsWithin(OpBuilder &b, Location loc, Value rows, int64_t low, int64_t high) {
  IndexBuilder x{b, loc};
  Value above = b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::sgt, rows, x.c(low));
  if (high < 0)
    return above;
  // The host's index arithmetic has no `and` of conditions: rows at or
  // below `low` become `high` + 1.
  Value clamped = b.createOrFold<arith::SelectOp>(loc, above, rows, x.c(high + 1));
  return b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::sle, clamped, x.c(high));
}

int64_t partsOfSteps(int64_t steps, int64_t splits) {
  if (splits <= 1 || steps <= 1)
    return 1;
  return llvm::divideCeil(steps, llvm::divideCeil(steps, std::min(splits, steps)));
}

} // namespace kiln
