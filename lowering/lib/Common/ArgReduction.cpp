//===- ArgReduction.cpp - matching argmax/argmin reductions --------------===//
#include "kiln/Lowering/Common/ArgReduction.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;

namespace kiln {

namespace {

/// Whether `v` is computed in `body` from `leaves` and values defined
/// outside the body only.
bool computedFrom(Value v, Block *body, ArrayRef<Value> leaves) {
  if (llvm::is_contained(leaves, v))
    return true;
  if (auto arg = dyn_cast<BlockArgument>(v))
    return arg.getOwner() != body;
  Operation *def = v.getDefiningOp();
  if (def->getBlock() != body)
    return true;
  if (isa<linalg::IndexOp>(def) || def->getNumRegions() != 0)
    return false;
  return llvm::all_of(def->getOperands(),
                      [&](Value operand) { return computedFrom(operand, body, leaves); });
}

bool isFirstPosition(Value v, unsigned dim) {
  auto cmp = v.getDefiningOp<arith::CmpIOp>();
  if (!cmp || cmp.getPredicate() != arith::CmpIPredicate::eq)
    return false;
  auto index = cmp.getLhs().getDefiningOp<linalg::IndexOp>();
  return index && index.getDim() == dim && matchPattern(cmp.getRhs(), m_Zero());
}

/// Clones what computes `v` in the body, from the values `mapping` gives.
Value cloneChain(OpBuilder &b, Block *body, Value v, IRMapping &mapping) {
  if (mapping.contains(v))
    return mapping.lookup(v);
  Operation *def = v.getDefiningOp();
  if (!def || def->getBlock() != body)
    return v;
  for (Value operand : def->getOperands())
    cloneChain(b, body, operand, mapping);
  b.clone(*def, mapping);
  return mapping.lookup(v);
}

/// Whether `v` beats `over` by the reduction's own comparison.
Value beats(OpBuilder &b, const ArgReduction &arg, Value v, Value over) {
  IRMapping mapping;
  mapping.map(arg.element, v);
  mapping.map(arg.best, over);
  return cloneChain(b, linalg::GenericOp(arg.op).getBody(), arg.better, mapping);
}

} // namespace

std::optional<ArgReduction> matchArgReduction(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInits() != 2)
    return std::nullopt;
  for (Value operand : op->getOperands())
    if (!isa<MemRefType>(operand.getType()))
      return std::nullopt;
  auto iterators = op.getIteratorTypesArray();
  if (llvm::count(iterators, utils::IteratorType::reduction) != 1)
    return std::nullopt;
  unsigned dim = llvm::find(iterators, utils::IteratorType::reduction) - iterators.begin();
  for (AffineMap map : op.getIndexingMapsArray())
    if (!map.isProjectedPermutation())
      return std::nullopt;
  for (OpOperand &init : op.getDpsInitsMutable())
    if (op.getMatchingIndexingMap(&init).isFunctionOfDim(dim))
      return std::nullopt;

  Block *body = op.getBody();
  BlockArgument best = body->getArgument(op.getNumDpsInputs());
  BlockArgument bestIndex = body->getArgument(op.getNumDpsInputs() + 1);
  if (!best.getType().isIntOrFloat() || !isa<IntegerType>(bestIndex.getType()))
    return std::nullopt;
  Operation *yield = body->getTerminator();
  auto pickValue = yield->getOperand(0).getDefiningOp<arith::SelectOp>();
  auto pickIndex = yield->getOperand(1).getDefiningOp<arith::SelectOp>();
  if (!pickValue || !pickIndex || pickValue.getCondition() != pickIndex.getCondition() ||
      pickValue.getFalseValue() != best || pickIndex.getFalseValue() != bestIndex)
    return std::nullopt;
  Operation *cast = pickIndex.getTrueValue().getDefiningOp();
  if (!isa_and_nonnull<arith::IndexCastUIOp, arith::IndexCastOp>(cast))
    return std::nullopt;
  auto position = cast->getOperand(0).getDefiningOp<linalg::IndexOp>();
  auto either = pickValue.getCondition().getDefiningOp<arith::OrIOp>();
  if (!position || position.getDim() != dim || !either)
    return std::nullopt;
  Value better, first;
  if (isFirstPosition(either.getRhs(), dim))
    std::tie(better, first) = std::pair{either.getLhs(), either.getRhs()};
  else if (isFirstPosition(either.getLhs(), dim))
    std::tie(better, first) = std::pair{either.getRhs(), either.getLhs()};
  else
    return std::nullopt;
  Value element = pickValue.getTrueValue();
  // Partials are compared with `better` alone, so it may read nothing but
  // the element and the best so far.
  if (!computedFrom(better, body, {element, best}))
    return std::nullopt;
  return ArgReduction{op, dim, better, first, element, best, bestIndex};
}

SmallVector<Value> operandIndices(linalg::GenericOp op, OpOperand *operand, ArrayRef<Value> ivs) {
  SmallVector<Value> indices;
  for (AffineExpr e : op.getMatchingIndexingMap(operand).getResults())
    indices.push_back(ivs[cast<AffineDimExpr>(e).getPosition()]);
  return indices;
}

std::pair<Value, Value> argReductionStep(OpBuilder &b, const ArgReduction &arg,
                                         ArrayRef<Value> ivs, Value value, Value index,
                                         bool fromFills) {
  linalg::GenericOp op = arg.op;
  Block *body = op.getBody();
  Location loc = op.getLoc();
  IRMapping mapping;
  for (OpOperand *in : op.getDpsInputOperands()) {
    BlockArgument input = body->getArgument(in->getOperandNumber());
    if (!input.use_empty())
      mapping.map(input, memref::LoadOp::create(b, loc, in->get(), operandIndices(op, in, ivs)));
  }
  mapping.map(arg.best, value);
  mapping.map(arg.bestIndex, index);
  for (Operation &o : body->without_terminator()) {
    if (auto position = dyn_cast<linalg::IndexOp>(o))
      mapping.map(position.getResult(), ivs[position.getDim()]);
    else if (fromFills && o.getNumResults() == 1 && o.getResult(0) == arg.first)
      mapping.map(arg.first, arith::ConstantIntOp::create(b, loc, b.getI1Type(), 0).getResult());
    else
      b.clone(o, mapping);
  }
  Operation *yield = body->getTerminator();
  return {mapping.lookup(yield->getOperand(0)), mapping.lookup(yield->getOperand(1))};
}

std::pair<Value, Value> combineArgPartials(OpBuilder &b, const ArgReduction &arg, Value va,
                                           Value ia, Value vb, Value ib) {
  Location loc = linalg::GenericOp(arg.op).getLoc();
  Value bWins = beats(b, arg, vb, va);
  Value aWins = beats(b, arg, va, vb);
  Value earlier = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, ib, ia);
  Value notA = arith::XOrIOp::create(b, loc, aWins,
                                     arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1));
  Value take =
      arith::OrIOp::create(b, loc, bWins, arith::AndIOp::create(b, loc, notA, earlier));
  return {arith::SelectOp::create(b, loc, take, vb, va),
          arith::SelectOp::create(b, loc, take, ib, ia)};
}

} // namespace kiln
