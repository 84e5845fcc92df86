//===- RowReduction.cpp - matching reductions over the innermost loop ----===//
#include "kiln/Lowering/Common/RowReduction.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/TypeSwitch.h"

#include <limits>

using namespace mlir;

namespace kiln {

namespace {
std::optional<vector::CombiningKind> combiningKind(Operation *op) {
  using K = vector::CombiningKind;
  auto reassoc = [](arith::FastMathFlagsAttr fm) {
    return fm && bitEnumContainsAll(fm.getValue(), arith::FastMathFlags::reassoc);
  };
  return llvm::TypeSwitch<Operation *, std::optional<K>>(op)
      .Case([&](arith::AddFOp o) -> std::optional<K> {
        return reassoc(o.getFastmathAttr()) ? std::optional(K::ADD) : std::nullopt;
      })
      .Case([&](arith::MulFOp o) -> std::optional<K> {
        return reassoc(o.getFastmathAttr()) ? std::optional(K::MUL) : std::nullopt;
      })
      .Case([](arith::AddIOp) { return K::ADD; })
      .Case([](arith::MulIOp) { return K::MUL; })
      .Case([](arith::MaximumFOp) { return K::MAXIMUMF; })
      .Case([](arith::MinimumFOp) { return K::MINIMUMF; })
      .Case([](arith::MaxSIOp) { return K::MAXSI; })
      .Case([](arith::MinSIOp) { return K::MINSI; })
      .Case([](arith::MaxUIOp) { return K::MAXUI; })
      .Case([](arith::MinUIOp) { return K::MINUI; })
      .Case([](arith::AndIOp) { return K::AND; })
      .Case([](arith::OrIOp) { return K::OR; })
      .Default([](Operation *) { return std::nullopt; });
}
} // namespace

Value reductionIdentity(OpBuilder &b, Location loc, vector::CombiningKind kind, Type type) {
  using Kind = vector::CombiningKind;
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

linalg::GenericOp buildCombine(OpBuilder &b, Location loc, const RowReduction &reduction,
                               Value acc, Value partials, Value out, ArrayRef<AffineMap> maps,
                               ArrayRef<utils::IteratorType> iterators) {
  return linalg::GenericOp::create(
      b, loc, TypeRange{}, ValueRange{partials}, ValueRange{out}, maps, iterators,
      [&](OpBuilder &nb, Location l, ValueRange args) {
        IRMapping mapping;
        mapping.map(reduction.element, args[0]);
        mapping.map(acc, args[1]);
        linalg::YieldOp::create(nb, l, nb.clone(*reduction.combiner, mapping)->getResults());
      });
}

bool hasScalarBody(linalg::GenericOp op) {
  return llvm::all_of(op.getBody()->without_terminator(), [](Operation &o) {
    StringRef dialect = o.getDialect() ? o.getDialect()->getNamespace() : "";
    return (dialect == "arith" || dialect == "math") && o.getNumRegions() == 0 &&
           llvm::all_of(o.getResultTypes(), [](Type t) { return t.isIntOrFloat(); });
  });
}

std::optional<RowReduction> matchRowReduction(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInits() != 1 ||
      !hasScalarBody(op))
    return std::nullopt;
  auto iterators = op.getIteratorTypesArray();
  unsigned last = iterators.size() - 1;
  if (iterators.empty() || iterators[last] != utils::IteratorType::reduction ||
      llvm::any_of(ArrayRef(iterators).drop_back(), [](auto t) {
        return t != utils::IteratorType::parallel;
      }))
    return std::nullopt;
  SmallVector<AffineExpr> outer;
  for (unsigned d = 0; d < last; ++d)
    outer.push_back(getAffineDimExpr(d, op.getContext()));
  if (op.getMatchingIndexingMap(op.getDpsInitOperand(0)) !=
      AffineMap::get(iterators.size(), 0, outer, op.getContext()))
    return std::nullopt;
  Block *body = op.getBody();
  BlockArgument acc = body->getArguments().back();
  Operation *combiner = body->getTerminator()->getOperand(0).getDefiningOp();
  if (!combiner || combiner->getNumOperands() != 2 || !acc.hasOneUse() ||
      acc.getUses().begin()->getOwner() != combiner)
    return std::nullopt;
  std::optional<vector::CombiningKind> kind = combiningKind(combiner);
  if (!kind)
    return std::nullopt;
  Value element = combiner->getOperand(0) == acc ? combiner->getOperand(1)
                                                 : combiner->getOperand(0);
  return RowReduction{combiner, element, *kind};
}

RangeKey rangeKey(Value buffer, int64_t dim) {
  auto type = cast<MemRefType>(buffer.getType());
  if (!type.isDynamicDim(dim))
    return {Value(), type.getDimSize(dim)};
  if (auto alloc = buffer.getDefiningOp<memref::AllocOp>()) {
    Value size = alloc.getDynamicSizes()[type.getDynamicDimIndex(dim)];
    if (auto d = size.getDefiningOp<memref::DimOp>())
      if (std::optional<int64_t> i = d.getConstantIndex())
        return rangeKey(d.getSource(), *i);
    return {size, -1};
  }
  return {buffer, dim};
}

SmallVector<std::pair<Value, int64_t>> loopSources(linalg::GenericOp op) {
  SmallVector<std::pair<Value, int64_t>> sources(op.getNumLoops());
  for (OpOperand &operand : op->getOpOperands())
    for (auto [p, e] : llvm::enumerate(op.getMatchingIndexingMap(&operand).getResults()))
      if (auto d = dyn_cast<AffineDimExpr>(e); d && !sources[d.getPosition()].first)
        sources[d.getPosition()] = {operand.get(), static_cast<int64_t>(p)};
  return sources;
}

SmallVector<RangeKey> loopKeys(linalg::GenericOp op) {
  SmallVector<RangeKey> keys;
  for (auto [buffer, dim] : loopSources(op))
    keys.push_back(buffer ? rangeKey(buffer, dim) : RangeKey{});
  return keys;
}

Value loopSize(OpBuilder &b, Location loc, std::pair<Value, int64_t> source) {
  auto [buffer, dim] = source;
  auto type = cast<MemRefType>(buffer.getType());
  if (!type.isDynamicDim(dim))
    return arith::ConstantIndexOp::create(b, loc, type.getDimSize(dim));
  return memref::DimOp::create(b, loc, buffer, dim);
}

} // namespace kiln
