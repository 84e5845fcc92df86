//===- DataMovement.cpp - kiln data-movement ops -> linalg/tensor --------===//
//
// Movement ops become index maps of linalg.generic where they can (so they
// fuse with their neighbours), tensor slices and inserts otherwise.
//
//===----------------------------------------------------------------------===//
#include "Patterns.h"
#include "kiln/Dialect/KilnOps.h"
#include "kiln/Lowering/KilnToLinalg/ScalarOps.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace kiln::to_linalg {
namespace {

/// A generic over the result with one input read through `inputMap`.
Value mapped(OpBuilder &b, Location loc, Value input, AffineMap inputMap,
             RankedTensorType resultType) {
  MLIRContext *ctx = b.getContext();
  int64_t rank = resultType.getRank();
  // A `?` result dim j is the size of the input dim that reads index d_j.
  SmallVector<Value> sizes;
  for (int64_t j = 0; j < rank; ++j)
    if (resultType.isDynamicDim(j))
      sizes.push_back(tensor::DimOp::create(
          b, loc, input, *inputMap.getResultPosition(getAffineDimExpr(j, ctx))));
  Value init = emptyTensor(b, loc, resultType.getShape(),
                           resultType.getElementType(), sizes);
  SmallVector<AffineMap> maps = {inputMap,
                                 AffineMap::getMultiDimIdentityMap(rank, ctx)};
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, resultType, input, init, maps, iterators,
             [](OpBuilder &nb, Location nloc, ValueRange args) {
               linalg::YieldOp::create(nb, nloc, args[0]);
             })
      .getResult(0);
}

struct ReshapeToTensor : OpConversionPattern<ReshapeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ReshapeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, reshapeTo(rewriter, op.getLoc(), adaptor.getX(),
                                     op.getType().getShape()));
    return success();
  }
};

struct BroadcastToGeneric : OpConversionPattern<BroadcastOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(BroadcastOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = signlessTensorType(op.getType());
    AffineMap map = broadcastMap(op.getX().getType().getShape(),
                                 type.getShape(), getContext());
    rewriter.replaceOp(op, mapped(rewriter, op.getLoc(), adaptor.getX(), map,
                                  type));
    return success();
  }
};

struct TransposeToGeneric : OpConversionPattern<TransposeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(TransposeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    // Result dim j is input dim perm[j]: input dim perm[j] reads index d_j.
    ArrayRef<int64_t> perm = op.getPerm();
    SmallVector<AffineExpr> exprs(perm.size());
    for (auto [j, p] : llvm::enumerate(perm))
      exprs[p] = getAffineDimExpr(j, getContext());
    AffineMap map = AffineMap::get(perm.size(), 0, exprs, getContext());
    rewriter.replaceOp(op, mapped(rewriter, op.getLoc(), adaptor.getX(), map,
                                  signlessTensorType(op.getType())));
    return success();
  }
};

/// flip over a dim of run-time size: an affine map cannot hold the size,
/// so each element reads x at (size - 1 - i) by index.
Value flippedAtRunTime(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> dims,
                       RankedTensorType type) {
  int64_t rank = type.getRank();
  // size - 1 - i is computed per element: a kernel's size parameters are
  // never negative (size - 1 of an empty dim would be).
  SmallVector<Value> sizes(rank);
  for (int64_t d : dims)
    sizes[d] = dimSize(b, loc, x, d);
  auto all = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  Value init = emptyTensor(b, loc, type.getShape(), type.getElementType(),
                           dynamicDimSizes(b, loc, x, all));
  SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(rank, b.getContext())};
  SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, type, ValueRange{}, init, maps, iterators,
             [&](OpBuilder &nb, Location nloc, ValueRange) {
               SmallVector<Value> at;
               for (int64_t d = 0; d < rank; ++d) {
                 Value i = linalg::IndexOp::create(nb, nloc, d);
                 if (sizes[d])
                   i = arith::SubIOp::create(
                       nb, nloc, arith::SubIOp::create(nb, nloc, sizes[d], i),
                       arith::ConstantIndexOp::create(nb, nloc, 1));
                 at.push_back(i);
               }
               linalg::YieldOp::create(nb, nloc, Value(tensor::ExtractOp::create(nb, nloc, x, at)));
             })
      .getResult(0);
}

struct FlipToGeneric : OpConversionPattern<FlipOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(FlipOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = signlessTensorType(op.getType());
    if (llvm::any_of(op.getDims(), [&](int64_t d) { return type.isDynamicDim(d); })) {
      rewriter.replaceOp(op, flippedAtRunTime(rewriter, op.getLoc(), adaptor.getX(),
                                              op.getDims(), type));
      return success();
    }
    SmallVector<AffineExpr> exprs;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      AffineExpr e = getAffineDimExpr(d, getContext());
      if (llvm::is_contained(op.getDims(), d))
        e = type.getDimSize(d) - 1 - e;
      exprs.push_back(e);
    }
    AffineMap map = AffineMap::get(type.getRank(), 0, exprs, getContext());
    rewriter.replaceOp(op,
                       mapped(rewriter, op.getLoc(), adaptor.getX(), map, type));
    return success();
  }
};

struct SliceToExtract : OpConversionPattern<SliceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SliceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = signlessTensorType(op.getType());
    // No elements: tensor.extract_slice's verifier rejects the offset a
    // slice at the end has (x[3:] of 3 elements).
    if (type.hasStaticShape() && type.getNumElements() == 0) {
      rewriter.replaceOpWithNewOp<tensor::EmptyOp>(op, type.getShape(), type.getElementType());
      return success();
    }
    SmallVector<int64_t> step(type.getRank(), 1);
    if (op.getStep())
      step.assign(op.getStep()->begin(), op.getStep()->end());
    rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
        op, type, adaptor.getX(), ValueRange{}, ValueRange{}, ValueRange{},
        op.getStart(), type.getShape(), step);
    return success();
  }
};

/// `source` written whole into `dest` at `offsets`.
Value insertAt(OpBuilder &b, Location loc, Value source, Value dest,
               ArrayRef<OpFoldResult> offsets) {
  int64_t rank = cast<RankedTensorType>(source.getType()).getRank();
  return tensor::InsertSliceOp::create(
      b, loc, source, dest, offsets, tensor::getMixedSizes(b, loc, source),
      SmallVector<OpFoldResult>(rank, b.getIndexAttr(1)));
}

/// `a + b`, folded where both are constants.
OpFoldResult addSizes(OpBuilder &b, Location loc, OpFoldResult x, OpFoldResult y) {
  std::optional<int64_t> cx = getConstantIntValue(x), cy = getConstantIntValue(y);
  if (cx && cy)
    return b.getIndexAttr(*cx + *cy);
  if (cx == 0)
    return y;
  if (cy == 0)
    return x;
  return arith::AddIOp::create(b, loc, getValueOrCreateConstantIndexOp(b, loc, x),
                               getValueOrCreateConstantIndexOp(b, loc, y))
      .getResult();
}

} // namespace

Value buildPad(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> low,
               ArrayRef<int64_t> high, Value value) {
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, x);
  for (auto [size, l, h] : llvm::zip(sizes, low, high))
    size = addSizes(b, loc, size, b.getIndexAttr(l + h));
  Value empty = tensor::EmptyOp::create(b, loc, sizes, value.getType());
  Value filled = linalg::FillOp::create(b, loc, value, empty).getResult(0);
  return insertAt(b, loc, x, filled, getAsIndexOpFoldResult(b.getContext(), low));
}

namespace {
struct PadToFillAndInsert : OpConversionPattern<PadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(PadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value value = scalarConstant(rewriter, loc, op.getType().getElementType(),
                                 op.getValue().convertToDouble());
    Value padded = buildPad(rewriter, loc, adaptor.getX(), op.getLow(), op.getHigh(), value);
    // A `?` dim padded to a size the result type states (the run checks).
    auto type = signlessTensorType(op.getType());
    if (padded.getType() != type)
      padded = tensor::CastOp::create(rewriter, loc, type, padded);
    rewriter.replaceOp(op, padded);
    return success();
  }
};

struct ConcatToInserts : OpConversionPattern<ConcatOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ConcatOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = signlessTensorType(op.getType());
    int64_t dim = op.getDim();
    // The other dims are the inputs' common size; the concatenated one
    // their sum, and each input's offset the sum before it.
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(rewriter, loc, adaptor.getXs()[0]);
    SmallVector<OpFoldResult> offsets(type.getRank(), rewriter.getIndexAttr(0));
    for (Value x : adaptor.getXs().drop_front())
      sizes[dim] =
          addSizes(rewriter, loc, sizes[dim], tensor::getMixedSize(rewriter, loc, x, dim));
    Value result = tensor::EmptyOp::create(rewriter, loc, sizes, type.getElementType());
    if (result.getType() != type)
      result = tensor::CastOp::create(rewriter, loc, type, result);
    for (auto [i, x] : llvm::enumerate(adaptor.getXs())) {
      // An input without elements adds nothing, and inserting it at the
      // end fails tensor.insert_slice's verifier.
      auto xType = cast<RankedTensorType>(x.getType());
      if (llvm::is_contained(xType.getShape(), 0))
        continue;
      result = insertAt(rewriter, loc, x, result, offsets);
      if (i + 1 < adaptor.getXs().size())
        offsets[dim] =
            addSizes(rewriter, loc, offsets[dim], tensor::getMixedSize(rewriter, loc, x, dim));
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// An index read from an index tensor, clamped into [0, size): out-of-range
/// indices must not read or write outside the tensor.
Value clampedIndex(OpBuilder &b, Location loc, Value idx, int64_t size) {
  Type t = idx.getType();
  Value zero = arith::ConstantOp::create(b, loc, t, b.getIntegerAttr(t, 0));
  Value last = arith::ConstantOp::create(
      b, loc, t, b.getIntegerAttr(t, std::max<int64_t>(size - 1, 0)));
  Value c = arith::MinSIOp::create(b, loc,
                                   arith::MaxSIOp::create(b, loc, idx, zero),
                                   last);
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), c);
}

/// Elementwise over the result of gather/index_select: each element reads x at
/// the result's own indices, with dim `dim` replaced by a looked-up index.
Value lookup(OpBuilder &b, Location loc, Value x, Value idx, AffineMap idxMap,
             int64_t dim, RankedTensorType resultType) {
  MLIRContext *ctx = b.getContext();
  int64_t rank = resultType.getRank();
  // The looked-up dim is static (DynamicShapes.cpp); a `?` result dim is
  // the index's where it reads one, else x's.
  int64_t size = cast<RankedTensorType>(x.getType()).getDimSize(dim);
  SmallVector<Value> sizes;
  for (int64_t j = 0; j < rank; ++j) {
    if (!resultType.isDynamicDim(j))
      continue;
    std::optional<unsigned> at = idxMap.getResultPosition(getAffineDimExpr(j, ctx));
    sizes.push_back(at ? tensor::DimOp::create(b, loc, idx, *at) : tensor::DimOp::create(b, loc, x, j));
  }
  Value init = emptyTensor(b, loc, resultType.getShape(),
                           resultType.getElementType(), sizes);
  SmallVector<AffineMap> maps = {idxMap,
                                 AffineMap::getMultiDimIdentityMap(rank, ctx)};
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, resultType, idx, init, maps, iterators,
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               SmallVector<Value> indices;
               for (int64_t d = 0; d < rank; ++d)
                 indices.push_back(d == dim
                                       ? clampedIndex(nb, nloc, args[0], size)
                                       : Value(linalg::IndexOp::create(nb, nloc, d)));
               Value v = tensor::ExtractOp::create(nb, nloc, x, indices);
               linalg::YieldOp::create(nb, nloc, v);
             })
      .getResult(0);
}

/// gather reads the index at the result's own position; index_select at the
/// position along `dim` only.
template <typename OpT>
struct LookupToGeneric : OpConversionPattern<OpT> {
  using OpConversionPattern<OpT>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpT op, typename OpT::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = signlessTensorType(op.getType());
    MLIRContext *ctx = rewriter.getContext();
    AffineMap idxMap =
        std::is_same_v<OpT, GatherOp>
            ? AffineMap::getMultiDimIdentityMap(type.getRank(), ctx)
            : AffineMap::get(type.getRank(), 0, getAffineDimExpr(op.getDim(), ctx));
    rewriter.replaceOp(op, lookup(rewriter, op.getLoc(), adaptor.getX(),
                                  adaptor.getIdx(), idxMap, op.getDim(), type));
    return success();
  }
};

/// scatter_add accumulates in index order, so it runs as a serial loop nest
/// over the index tensor, updating the result in place.
struct ScatterAddToLoops : OpConversionPattern<ScatterAddOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ScatterAddOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    int64_t dim = op.getDim();
    // Static: a `?` scattered dim could be empty (DynamicShapes.cpp).
    int64_t size = op.getX().getType().getDimSize(dim);
    Type elem = cast<RankedTensorType>(adaptor.getX().getType()).getElementType();
    bool isFloat = isa<FloatType>(elem);
    // Start from a copy of x so the input is not clobbered.
    auto type = cast<RankedTensorType>(adaptor.getX().getType());
    Value acc = linalg::CopyOp::create(
                    rewriter, loc, adaptor.getX(),
                    emptyTensor(rewriter, loc, type.getShape(), elem,
                                dynamicDimSizes(rewriter, loc, adaptor.getX(),
                                                llvm::to_vector(llvm::seq<int64_t>(
                                                    0, type.getRank())))))
                    .getResult(0);
    Value idx = adaptor.getIdx(), src = adaptor.getSrc();
    SmallVector<Value> lbs, ubs, steps;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      lbs.push_back(arith::ConstantIndexOp::create(rewriter, loc, 0));
      ubs.push_back(dimSize(rewriter, loc, idx, d));
      steps.push_back(arith::ConstantIndexOp::create(rewriter, loc, 1));
    }
    scf::LoopNest nest = scf::buildLoopNest(
        rewriter, loc, lbs, ubs, steps, ValueRange{acc},
        [&](OpBuilder &b, Location l, ValueRange ivs, ValueRange iters) {
          Value j = clampedIndex(
              b, l, tensor::ExtractOp::create(b, l, idx, ivs), size);
          SmallVector<Value> at(ivs.begin(), ivs.end());
          at[dim] = j;
          Value cur = tensor::ExtractOp::create(b, l, iters[0], at);
          Value add = tensor::ExtractOp::create(b, l, src, ivs);
          Value sum = isFloat ? Value(arith::AddFOp::create(
                                    b, l,
                                    castScalar(b, l, cur, elem,
                                               computeFloatType(elem)),
                                    castScalar(b, l, add, elem,
                                               computeFloatType(elem))))
                              : Value(arith::AddIOp::create(b, l, cur, add));
          if (isFloat)
            sum = castScalar(b, l, sum, sum.getType(), elem);
          return SmallVector<Value>{
              tensor::InsertOp::create(b, l, sum, iters[0], at)};
        });
    rewriter.replaceOp(op, nest.results.empty() ? acc : nest.results[0]);
    return success();
  }
};

} // namespace

void populateDataMovementPatterns(TypeConverter &converter,
                                  RewritePatternSet &patterns) {
  patterns.add<ReshapeToTensor, BroadcastToGeneric, TransposeToGeneric,
               FlipToGeneric, SliceToExtract, PadToFillAndInsert,
               ConcatToInserts, LookupToGeneric<GatherOp>,
               LookupToGeneric<IndexSelectOp>, ScatterAddToLoops>(converter, patterns.getContext());
}

} // namespace kiln::to_linalg
