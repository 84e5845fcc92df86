//===- CpuInterchangeWindows.cpp - the kiln-cpu-interchange-windows pass --===//
//
// A direct conv's or a pool's generic ends in its window's reduction loops
// (kh, kw): kiln-vectorize takes only a reduction innermost that is a row at
// least a vector long, so such kernels ran one tap of one output at a time.
// With the output row's loop (ow) innermost instead, each vector of the row
// is carried through the taps, reading the input at `ow + kw` (a 3x3
// depthwise conv of 8x128x56x56 on 2 AVX-512 cores: see
// docs/benchmarks-cpu.md, session 38).
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/CPU/Passes.h"
#include "kiln/Lowering/Common/RowReduction.h"
#include "kiln/Lowering/Common/VectorUtils.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

namespace kiln {
#define GEN_PASS_DEF_KILNCPUINTERCHANGEWINDOWS
#include "kiln/Lowering/CPU/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// The loop order with the output row's loop innermost, or empty where
/// `op` is no window reduction that kiln-vectorize would then take.
SmallVector<unsigned> rowInnermost(linalg::GenericOp op, int64_t width) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInits() != 1 || !kiln::hasScalarBody(op))
    return {};
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  auto iterators = op.getIteratorTypesArray();
  unsigned loops = ranges.size();
  auto lastParallel = llvm::find_if(llvm::reverse(iterators), [](utils::IteratorType t) {
    return t == utils::IteratorType::parallel;
  });
  if (lastParallel == iterators.rend() || lastParallel == iterators.rbegin())
    return {};
  unsigned row = std::distance(lastParallel, iterators.rend()) - 1;
  // The innermost reduction is too short for a row reduction's vectors.
  if (ShapedType::isDynamic(ranges.back()) || ranges.back() >= width ||
      ShapedType::isDynamic(ranges[row]) || ranges[row] < width)
    return {};
  for (Value v : op->getOperands())
    if (cast<MemRefType>(v.getType()).getElementTypeBitWidth() < 8)
      return {};
  OpOperand *out = op.getDpsInitOperand(0);
  AffineMap outMap = op.getMatchingIndexingMap(out);
  if (kiln::classify(outMap, out->get(), row) != kiln::Access::Vector)
    return {};
  for (OpOperand *in : op.getDpsInputOperands())
    if (!kiln::classify(op.getMatchingIndexingMap(in), in->get(), row,
                        kiln::ReadKinds{/*reversed=*/false, /*windows=*/true}))
      return {};
  SmallVector<unsigned> order;
  for (unsigned d = 0; d < loops; ++d)
    if (d != row)
      order.push_back(d);
  order.push_back(row);
  return order;
}

struct KilnCpuInterchangeWindowsPass
    : kiln::impl::KilnCpuInterchangeWindowsBase<KilnCpuInterchangeWindowsPass> {
  using KilnCpuInterchangeWindowsBase::KilnCpuInterchangeWindowsBase;
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<std::pair<linalg::GenericOp, SmallVector<unsigned>>> windows;
    getOperation().walk([&](linalg::GenericOp op) {
      if (SmallVector<unsigned> order = rowInnermost(op, vectorWidth); !order.empty())
        windows.emplace_back(op, std::move(order));
    });
    for (auto &[op, order] : windows) {
      rewriter.setInsertionPoint(op);
      (void)linalg::interchangeGenericOp(rewriter, op, order);
    }
  }
};

} // namespace
