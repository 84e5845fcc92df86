//===- Scan.cpp - matching kiln.cumsum's loop nest on buffers -------------===//
#include "kiln/Lowering/Common/Scan.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;

namespace kiln {

static std::optional<int64_t> constantBound(Value v) { return getConstantIntValue(v); }

static bool isUnitStepFromZero(scf::ForOp loop) {
  return constantBound(loop.getLowerBound()) == 0 && constantBound(loop.getStep()) == 1;
}

static bool isZero(Value v) {
  return matchPattern(v, m_AnyZeroFloat()) || matchPattern(v, m_Zero());
}

/// Matches the nest rooted at `top` as a scan with a zero start.
std::optional<Scan> matchScan(scf::ForOp top) {
  Scan scan{top, {}, top, {}, {}, nullptr, {}, 0, {}};
  scf::ForOp loop = top;
  while (loop.getNumRegionIterArgs() == 0) {
    if (!isUnitStepFromZero(loop))
      return std::nullopt;
    auto ops = loop.getBody()->without_terminator();
    if (std::distance(ops.begin(), ops.end()) != 1)
      return std::nullopt;
    auto inner = dyn_cast<scf::ForOp>(*ops.begin());
    if (!inner)
      return std::nullopt;
    scan.outer.push_back(loop);
    loop = inner;
  }
  scan.loop = loop;
  if (!isUnitStepFromZero(loop) || loop.getNumRegionIterArgs() != 1 ||
      !isZero(loop.getInitArgs()[0]))
    return std::nullopt;
  Value acc = loop.getRegionIterArgs()[0];
  Block *body = loop.getBody();
  for (Operation &op : body->without_terminator()) {
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      if (scan.load)
        return std::nullopt;
      scan.load = load;
    } else if (auto store = dyn_cast<memref::StoreOp>(op)) {
      if (scan.store)
        return std::nullopt;
      scan.store = store;
    } else if (!isa_and_nonnull<arith::ArithDialect>(op.getDialect()) ||
               op.getNumRegions() != 0 || op.getNumResults() != 1) {
      return std::nullopt;
    }
  }
  Operation *add = body->getTerminator()->getOperand(0).getDefiningOp();
  if (!scan.load || !scan.store || !isa_and_nonnull<arith::AddFOp, arith::AddIOp>(add) ||
      !acc.hasOneUse() || acc.getUses().begin()->getOwner() != add)
    return std::nullopt;
  scan.add = add;
  scan.element = add->getOperand(0) == acc ? add->getOperand(1) : add->getOperand(0);
  // Both access [outer ivs in order, with the scan's iv at `dim`], in full.
  if (scan.load.getIndices() != scan.store.getIndices() ||
      scan.load.getMemRef() == scan.store.getMemRef())
    return std::nullopt;
  auto xType = cast<MemRefType>(scan.load.getMemRef().getType());
  auto outType = cast<MemRefType>(scan.store.getMemRef().getType());
  if (xType.getShape() != outType.getShape() ||
      xType.getRank() != static_cast<int64_t>(scan.outer.size()) + 1)
    return std::nullopt;
  unsigned next = 0;
  scan.dim = -1;
  for (auto [d, index] : llvm::enumerate(scan.load.getIndices())) {
    scf::ForOp owner = index == loop.getInductionVar()
                           ? loop
                           : next < scan.outer.size() ? scan.outer[next] : scf::ForOp();
    // A run-time size is the bound kiln-convert-to-linalg read off the
    // input (kernel formation may pass it in as an argument).
    Value bound = owner ? owner.getUpperBound() : Value();
    if (!owner || index != owner.getInductionVar() ||
        (xType.isDynamicDim(d) ? constantBound(bound).has_value()
                               : constantBound(bound) != xType.getDimSize(d)))
      return std::nullopt;
    scan.sizes.push_back(getAsOpFoldResult(bound));
    if (owner == loop)
      scan.dim = d;
    else
      ++next;
  }
  if (scan.dim < 0)
    return std::nullopt;
  return scan;
}

} // namespace kiln
