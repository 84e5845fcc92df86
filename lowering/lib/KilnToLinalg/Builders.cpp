//===- Builders.cpp - linalg building blocks for kiln's kernels ----------===//
#include "Patterns.h"
#include "kiln/Lowering/KilnToLinalg/DynamicShapes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "kiln/Lowering/KilnToLinalg/ScalarOps.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"

using namespace mlir;

namespace kiln::to_linalg {

RankedTensorType signlessTensorType(Type kilnTensorType) {
  auto t = cast<RankedTensorType>(kilnTensorType);
  return RankedTensorType::get(t.getShape(), signlessType(t.getElementType()));
}

Value emptyTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                  Type elementType, ValueRange dynamicSizes) {
  return tensor::EmptyOp::create(b, loc, shape, elementType, dynamicSizes);
}

SmallVector<Value> dynamicSizes(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                                ValueRange sources) {
  SmallVector<Value> sizes;
  for (auto [d, size] : llvm::enumerate(shape)) {
    if (!ShapedType::isDynamic(size))
      continue;
    size_t fromRight = shape.size() - d;
    auto source = llvm::find_if(sources, [&](Value v) {
      ArrayRef<int64_t> s = cast<ShapedType>(v.getType()).getShape();
      return s.size() >= fromRight && s[s.size() - fromRight] != 1;
    });
    // Where every operand is 1 (or has no such dim), so is the result.
    sizes.push_back(source == sources.end()
                        ? Value(arith::ConstantIndexOp::create(b, loc, 1))
                        : Value(tensor::DimOp::create(
                              b, loc, *source,
                              cast<ShapedType>((*source).getType()).getRank() - fromRight)));
  }
  return sizes;
}

SmallVector<Value> sizelessDynamicSizes(ConversionPatternRewriter &rewriter, Operation *op) {
  SmallVector<Value> sizes;
  auto sources = op->getAttrOfType<DenseI64ArrayAttr>(kSizeSourcesAttrName);
  if (!sources)
    return sizes;
  Location loc = op->getLoc();
  auto func = op->getParentOfType<func::FuncOp>();
  ArrayRef<int64_t> flat = sources.asArrayRef();
  for (size_t i = 0; i + 2 < flat.size(); i += 3) {
    if (flat[i] >= 0) {
      sizes.push_back(arith::ConstantIndexOp::create(rewriter, loc, flat[i]));
      continue;
    }
    Value arg = rewriter.getRemappedValue(func.getArgument(flat[i + 1]));
    sizes.push_back(tensor::DimOp::create(rewriter, loc, arg, flat[i + 2]));
  }
  return sizes;
}

Value dimSize(OpBuilder &b, Location loc, Value tensor, int64_t dim) {
  int64_t size = cast<ShapedType>(tensor.getType()).getDimSize(dim);
  if (!ShapedType::isDynamic(size))
    return arith::ConstantIndexOp::create(b, loc, size);
  return tensor::DimOp::create(b, loc, tensor, dim);
}

SmallVector<Value> dynamicDimSizes(OpBuilder &b, Location loc, Value tensor,
                                   ArrayRef<int64_t> dims) {
  SmallVector<Value> sizes;
  for (int64_t d : dims)
    if (cast<ShapedType>(tensor.getType()).isDynamicDim(d))
      sizes.push_back(tensor::DimOp::create(b, loc, tensor, d));
  return sizes;
}

Value dimSizeAsFloat(OpBuilder &b, Location loc, Value tensor, int64_t dim, Type floatType) {
  int64_t size = cast<ShapedType>(tensor.getType()).getDimSize(dim);
  if (!ShapedType::isDynamic(size))
    return arith::ConstantOp::create(b, loc, floatType,
                                     b.getFloatAttr(floatType, static_cast<double>(size)));
  Value index = tensor::DimOp::create(b, loc, tensor, dim);
  Value i64 = arith::IndexCastUIOp::create(b, loc, b.getI64Type(), index);
  return arith::UIToFPOp::create(b, loc, floatType, i64);
}

AffineMap broadcastMap(ArrayRef<int64_t> operandShape,
                       ArrayRef<int64_t> resultShape, MLIRContext *ctx) {
  SmallVector<AffineExpr> exprs;
  size_t offset = resultShape.size() - operandShape.size();
  for (auto [i, size] : llvm::enumerate(operandShape)) {
    size_t resultDim = offset + i;
    if (size == 1 && resultShape[resultDim] != 1)
      exprs.push_back(getAffineConstantExpr(0, ctx));
    else
      exprs.push_back(getAffineDimExpr(resultDim, ctx));
  }
  return AffineMap::get(resultShape.size(), 0, exprs, ctx);
}

Value buildElementwise(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                       Type resultElementType, ValueRange inputs,
                       const BodyFn &body, ValueRange resultSizes) {
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineMap> maps;
  for (Value in : inputs)
    maps.push_back(
        broadcastMap(cast<ShapedType>(in.getType()).getShape(), shape, ctx));
  maps.push_back(AffineMap::getMultiDimIdentityMap(shape.size(), ctx));
  SmallVector<utils::IteratorType> iterators(shape.size(),
                                             utils::IteratorType::parallel);
  Value init = emptyTensor(b, loc, shape, resultElementType,
                           resultSizes.empty() ? ValueRange(dynamicSizes(b, loc, shape, inputs))
                                               : resultSizes);
  auto generic = linalg::GenericOp::create(
      b, loc, init.getType(), inputs, init, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value r = body(nb, nloc, args.drop_back());
        linalg::YieldOp::create(nb, nloc, r);
      });
  return generic.getResult(0);
}

Value buildReduction(
    OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> dims, Value init,
    const std::function<Value(OpBuilder &, Location, Value, Value)> &combine) {
  MLIRContext *ctx = b.getContext();
  auto inType = cast<RankedTensorType>(input.getType());
  int64_t rank = inType.getRank();
  SmallVector<int64_t> outShape;
  SmallVector<Value> outSizes;
  SmallVector<AffineExpr> outExprs;
  SmallVector<utils::IteratorType> iterators;
  for (int64_t d = 0; d < rank; ++d) {
    bool reduced = llvm::is_contained(dims, d);
    iterators.push_back(reduced ? utils::IteratorType::reduction
                                : utils::IteratorType::parallel);
    if (!reduced) {
      outShape.push_back(inType.getDimSize(d));
      outExprs.push_back(getAffineDimExpr(d, ctx));
      if (inType.isDynamicDim(d))
        outSizes.push_back(tensor::DimOp::create(b, loc, input, d));
    }
  }
  Value empty = emptyTensor(b, loc, outShape, init.getType(), outSizes);
  Value filled = linalg::FillOp::create(b, loc, init, empty).getResult(0);
  SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(rank, ctx),
                                 AffineMap::get(rank, 0, outExprs, ctx)};
  auto generic = linalg::GenericOp::create(
      b, loc, filled.getType(), input, filled, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        linalg::YieldOp::create(nb, nloc, combine(nb, nloc, args[0], args[1]));
      });
  return generic.getResult(0);
}

Value buildRowwise(OpBuilder &b, Location loc, ValueRange full,
                   ValueRange rowValues, int64_t dim, Type resultElementType,
                   const BodyFn &body) {
  MLIRContext *ctx = b.getContext();
  auto shape = cast<RankedTensorType>(full.front().getType()).getShape();
  int64_t rank = shape.size();
  SmallVector<AffineExpr> rowExprs;
  for (int64_t d = 0; d < rank; ++d)
    if (d != dim)
      rowExprs.push_back(getAffineDimExpr(d, ctx));
  SmallVector<Value> inputs(full.begin(), full.end());
  SmallVector<AffineMap> maps(full.size(),
                              AffineMap::getMultiDimIdentityMap(rank, ctx));
  for (Value r : rowValues) {
    inputs.push_back(r);
    maps.push_back(AffineMap::get(rank, 0, rowExprs, ctx));
  }
  maps.push_back(AffineMap::getMultiDimIdentityMap(rank, ctx));
  Value init = emptyTensor(b, loc, shape, resultElementType,
                           dynamicSizes(b, loc, shape, full.take_front()));
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, init.getType(), inputs, init, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        linalg::YieldOp::create(nb, nloc, body(nb, nloc, args.drop_back()));
      });
  return generic.getResult(0);
}

Value reshapeTo(OpBuilder &b, Location loc, Value value,
                ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getShape() == shape)
    return value;
  Type elem = type.getElementType();
  auto outType = RankedTensorType::get(shape, elem);
  // Run-time sizes: one collapse or expansion of groups of dims where
  // there is one (a flat `?` vector cannot expand into two `?` dims).
  if (!type.hasStaticShape() && type.getRank() != static_cast<int64_t>(shape.size())) {
    bool collapse = type.getRank() > static_cast<int64_t>(shape.size());
    auto groups = collapse ? getReassociationIndicesForReshape(type, outType)
                           : getReassociationIndicesForReshape(outType, type);
    if (groups && collapse)
      return tensor::CollapseShapeOp::create(b, loc, outType, value, *groups);
    // An expansion's groups index the result's dims; each holds one `?` at
    // most (the builder infers its size).
    if (groups && llvm::all_of(*groups, [&](const ReassociationIndices &g) {
          return llvm::count_if(g, [&](int64_t d) { return ShapedType::isDynamic(shape[d]); }) <=
                 1;
        }))
      return tensor::ExpandShapeOp::create(b, loc, outType, value, *groups);
  }
  int64_t count = type.hasStaticShape() ? type.getNumElements() : ShapedType::kDynamic;
  auto flatType = RankedTensorType::get({count}, elem);
  // Rank 0 has no dims to group; rank 1 already is flat.
  auto groupsOf = [](int64_t rank) {
    SmallVector<ReassociationIndices> groups;
    if (rank == 0)
      return groups;
    groups.emplace_back();
    for (int64_t d = 0; d < rank; ++d)
      groups.back().push_back(d);
    return groups;
  };
  Value flat = value;
  if (type.getRank() == 0)
    flat = tensor::ExpandShapeOp::create(b, loc, flatType, value, groupsOf(0));
  else if (type.getRank() > 1)
    flat = tensor::CollapseShapeOp::create(b, loc, value,
                                           groupsOf(type.getRank()));
  if (shape.size() == 1)
    return flat;
  if (shape.empty())
    return tensor::CollapseShapeOp::create(b, loc, outType, flat, groupsOf(0));
  return tensor::ExpandShapeOp::create(b, loc, outType, flat,
                                       groupsOf(shape.size()));
}

Value expandKeptDims(OpBuilder &b, Location loc, Value value,
                     ArrayRef<int64_t> dims, ArrayRef<int64_t> fullShape) {
  SmallVector<int64_t> kept;
  for (auto [d, size] : llvm::enumerate(fullShape))
    kept.push_back(llvm::is_contained(dims, static_cast<int64_t>(d)) ? 1 : size);
  auto type = cast<RankedTensorType>(value.getType());
  if (type.hasStaticShape() || type.getRank() == 0)
    return reshapeTo(b, loc, value, kept);
  // Each kept dim takes the 1s before it into its group (the last one those
  // after it too), so no group holds two `?` dims.
  SmallVector<ReassociationIndices> groups(type.getRank());
  int64_t group = 0;
  for (int64_t d = 0; d < static_cast<int64_t>(kept.size()); ++d) {
    groups[group].push_back(d);
    if (!llvm::is_contained(dims, d) && group + 1 < type.getRank())
      ++group;
  }
  return tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get(kept, type.getElementType()), value, groups);
}

} // namespace kiln::to_linalg
