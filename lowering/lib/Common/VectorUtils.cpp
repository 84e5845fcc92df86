//===- VectorUtils.cpp - vectorising kernel bodies along the innermost loop -===//
#include "kiln/Lowering/Common/VectorUtils.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace kiln {


bool unitInnerStride(Value memref) {
  auto type = cast<MemRefType>(memref.getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  return succeeded(type.getStridesAndOffset(strides, offset)) &&
         (strides.empty() || strides.back() == 1);
}

int64_t innerCoefficient(AffineMap map, unsigned last) {
  if (map.getNumResults() == 0)
    return 0;
  AffineExpr inner = map.getResults().back();
  AffineExpr dim = getAffineDimExpr(last, map.getContext());
  for (int64_t coefficient = -1; coefficient <= kMaxReadStride; ++coefficient) {
    AffineExpr rest = simplifyAffineExpr(inner - coefficient * dim, map.getNumDims(),
                                         map.getNumSymbols());
    if (coefficient != 0 && !rest.isFunctionOfDim(last))
      return coefficient;
  }
  return 0;
}

std::optional<Access> classify(AffineMap map, Value memref, unsigned last, ReadKinds kinds) {
  bool usesLast = false;
  for (AffineExpr e : map.getResults())
    usesLast |= e.isFunctionOfDim(last);
  if (!usesLast)
    return Access::Splat;
  for (AffineExpr e : map.getResults().drop_back())
    if (e.isFunctionOfDim(last))
      return std::nullopt;
  if (!unitInnerStride(memref))
    return std::nullopt;
  if (map.getResults().back() == getAffineDimExpr(last, map.getContext()))
    return Access::Vector;
  int64_t coefficient = innerCoefficient(map, last);
  if (kinds.reversed && coefficient == -1)
    return Access::Reversed;
  if (kinds.windows && coefficient == 1)
    return Access::Shifted;
  if (kinds.windows && coefficient > 1 && coefficient <= kMaxReadStride)
    return Access::Strided;
  return std::nullopt;
}

/// The alignment (bytes, at most 16) that every `width`-wide access at a
/// multiple-of-`width` innermost index of `memref` has, or 0 if unknown.
/// Buffers themselves are at least 16-byte aligned.
static int64_t vectorAlignment(Value memref, int64_t width) {
  auto type = cast<MemRefType>(memref.getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) ||
      ShapedType::isDynamic(offset) || offset % width != 0)
    return 0;
  // A dense buffer's outer strides are multiples of its rows' length, a
  // run-time row count's too.
  const bool denseRows = type.getLayout().isIdentity() && type.getRank() > 0 &&
                         !type.isDynamicDim(type.getRank() - 1) &&
                         type.getShape().back() % width == 0;
  for (int64_t s : ArrayRef(strides).drop_back())
    if (!denseRows && (ShapedType::isDynamic(s) || s % width != 0))
      return 0;
  int64_t bytes = width * std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
  return std::min<int64_t>(bytes, 16);
}

IntegerAttr alignmentAttr(OpBuilder &b, Value memref, int64_t width) {
  int64_t align = vectorAlignment(memref, width);
  return align ? b.getI64IntegerAttr(align) : IntegerAttr();
}

SmallVector<Value> indicesFor(OpBuilder &b, Location loc, AffineMap map,
                              ValueRange ivs) {
  SmallVector<Value> indices;
  for (AffineExpr e : map.getResults())
    indices.push_back(affine::AffineApplyOp::create(
        b, loc, AffineMap::get(map.getNumDims(), 0, e), ivs));
  return indices;
}

/// Maps `v`, a value from outside `body` (a hoisted constant), to itself, or
/// to a splat of it with `width` > 0, unless it is mapped already.
static void mapOutside(OpBuilder &b, Location loc, Block *body, IRMapping &mapping,
                       int64_t width, Value v) {
  if (mapping.contains(v) || v.getParentBlock() == body)
    return;
  mapping.map(v, width == 0 ? v
                            : vector::BroadcastOp::create(
                                  b, loc, VectorType::get({width}, v.getType()), v)
                                  .getResult());
}

void cloneOnVectors(OpBuilder &b, Location loc, Operation &op, IRMapping &mapping,
                    int64_t width) {
  if (width == 0) {
    b.clone(op, mapping);
    return;
  }
  for (Value operand : op.getOperands())
    mapOutside(b, loc, op.getBlock(), mapping, width, operand);
  if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
    auto type = VectorType::get({width}, constant.getType());
    mapping.map(constant.getResult(),
                arith::ConstantOp::create(b, loc, type,
                                          DenseElementsAttr::get(type, constant.getValue())));
    return;
  }
  Operation *copy = b.clone(op, mapping);
  for (Value r : copy->getResults())
    r.setType(VectorType::get({width}, r.getType()));
}

void cloneBody(OpBuilder &b, Location loc, Block &body, IRMapping &mapping,
               int64_t width, Operation *skip) {
  for (Operation &op : body.without_terminator())
    if (&op != skip)
      cloneOnVectors(b, loc, op, mapping, width);
  // What the body yields, or `skip` combines, may come from outside too (a
  // kernel that only writes a constant has no body ops at all).
  for (Value v : body.getTerminator()->getOperands())
    mapOutside(b, loc, &body, mapping, width, v);
  if (skip)
    for (Value v : skip->getOperands())
      mapOutside(b, loc, &body, mapping, width, v);
}

linalg::GenericOp cloneOnSlices(OpBuilder &b, Location loc, linalg::GenericOp op,
                                ArrayRef<LoopSlice> slices) {
  MLIRContext *ctx = b.getContext();
  auto c = [&](int64_t v) { return getAffineConstantExpr(v, ctx); };
  // A sliced loop inside a larger expression (a flip's `19 - j`) runs from
  // the slice's offset there; the operand stays whole along that result.
  SmallVector<AffineExpr> shifted;
  for (unsigned d = 0; d < op.getNumLoops(); ++d)
    shifted.push_back(getAffineDimExpr(d, ctx));
  for (const LoopSlice &slice : slices)
    if (std::optional<int64_t> offset = getConstantIntValue(slice.offset))
      shifted[slice.dim] = shifted[slice.dim] + c(*offset);
  SmallVector<Value> operands;
  SmallVector<AffineMap> maps;
  for (OpOperand &operand : op->getOpOperands()) {
    AffineMap map = op.getMatchingIndexingMap(&operand);
    SmallVector<OpFoldResult> offsets, sizes, strides;
    SmallVector<AffineExpr> results;
    for (auto [d, e] : llvm::enumerate(map.getResults())) {
      const LoopSlice *slice = llvm::find_if(slices, [&](const LoopSlice &s) {
        return e == getAffineDimExpr(s.dim, ctx);
      });
      bool sliced = slice != slices.end();
      offsets.push_back(sliced ? slice->offset : b.getIndexAttr(0));
      sizes.push_back(sliced ? slice->size : memref::getMixedSize(b, loc, operand.get(), d));
      strides.push_back(b.getIndexAttr(1));
      results.push_back(sliced ? e
                               : simplifyAffineExpr(e.replaceDims(shifted), map.getNumDims(),
                                                    map.getNumSymbols()));
      assert((sliced || llvm::all_of(slices, [&](const LoopSlice &s) {
                return !e.isFunctionOfDim(s.dim) || getConstantIntValue(s.offset);
              })) &&
             "a run-time slice offset inside an index expression");
    }
    operands.push_back(memref::SubViewOp::create(b, loc, operand.get(), offsets, sizes, strides));
    maps.push_back(AffineMap::get(map.getNumDims(), map.getNumSymbols(), results, ctx));
  }
  auto clone = cast<linalg::GenericOp>(b.clone(*op));
  clone->setOperands(operands);
  clone.setIndexingMapsAttr(b.getAffineMapArrayAttr(maps));
  return clone;
}

/// The transpose of the V x V matrix whose rows are `rows` (V vectors of V
/// lanes, V a power of two): log2 V rounds, each interleaving row i with
/// row i + V/2 into rows 2i and 2i + 1. A round rotates the bits of an
/// element's (row, lane) position left by one, so log2 V rounds swap them.
SmallVector<Value> transposeInRegisters(OpBuilder &b, Location loc, SmallVector<Value> rows) {
  int64_t side = rows.size(), half = side / 2;
  SmallVector<int64_t> low, high;
  for (int64_t j = 0; j < half; ++j) {
    low.append({j, side + j});
    high.append({half + j, side + half + j});
  }
  for (int64_t round = side; round > 1; round /= 2) {
    SmallVector<Value> next;
    for (int64_t i = 0; i < half; ++i) {
      next.push_back(vector::ShuffleOp::create(b, loc, rows[i], rows[i + half], low));
      next.push_back(vector::ShuffleOp::create(b, loc, rows[i], rows[i + half], high));
    }
    rows = std::move(next);
  }
  return rows;
}

} // namespace kiln
