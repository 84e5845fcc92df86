//===- MatmulKernels.cpp - pieces the GPU matmul kernel builders share ---===//
#include "kiln/Lowering/Common/MatmulKernels.h"

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

} // namespace kiln
