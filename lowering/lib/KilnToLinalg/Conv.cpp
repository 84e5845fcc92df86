//===- Conv.cpp - kiln.conv2d and the pools -> linalg.generic -------------===//
//
// Inputs are padded by fill + insert_slice. conv2d is a GEMM per image (and
// group) on the matmul kernels of each target: the weights as [G, Og,
// KH*KW*Cg] times the image's window patches (im2col) as [G, KH*KW*Cg,
// OH*OW] make the output in NCHW order (f16/bf16 into f32). The patches
// are read from a channels-last copy of the input, with the weights
// permuted to match, so a window's channels are contiguous: a GPU kernel
// that gathers the patches instead of copying them loads 16 bytes at a
// time. A 1x1 stride-1 conv multiplies the input itself. Depthwise-like
// convs (one output
// channel per group) would make a one-row GEMM, so they, and the pools, are
// one linalg.generic over the output with the window as reduction dims: one
// thread (or loop iteration) per output element. An elementwise epilogue
// adds the bias (conv2d) or divides by the window size (avg_pool2d) and
// rounds to the element type; the matmul kernels run conv2d's on the
// product's registers.
//
//===----------------------------------------------------------------------===//
#include "Patterns.h"
#include "kiln/Dialect/KilnOps.h"
#include "kiln/Lowering/KilnToLinalg/Passes.h"
#include "kiln/Lowering/KilnToLinalg/ScalarOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include "llvm/Support/MathExtras.h"

#include <array>
#include <limits>

using namespace mlir;

namespace kiln::to_linalg {
namespace {

/// `x` ([..., H, W]) padded by `padding` (h, w) on both sides of its last
/// two dims.
Value padSpatial(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> padding,
                 Type element, double value) {
  if (padding[0] == 0 && padding[1] == 0)
    return x;
  int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  SmallVector<int64_t> pads(rank, 0);
  pads[rank - 2] = padding[0];
  pads[rank - 1] = padding[1];
  return buildPad(b, loc, x, pads, pads, scalarConstant(b, loc, element, value));
}

/// The input position of output position `out` and window offset `tap`
/// along one spatial dim of `span` places (padded). A window of `kernel`
/// taps spanning the whole dim (a global pool) has one place and reads at
/// its tap alone: a plain reduction, which the GPU reduction passes take.
AffineExpr windowIndex(AffineExpr out, AffineExpr tap, int64_t stride, int64_t dilation,
                       int64_t kernel, int64_t span) {
  if (span == dilation * (kernel - 1) + 1)
    return tap * dilation;
  return out * stride + tap * dilation;
}

/// Window sums may be reassociated, like kiln's reduce_sum: the GPU
/// reduction passes then split a long window across threads.
arith::FastMathFlagsAttr reassociable(OpBuilder &b) {
  return arith::FastMathFlagsAttr::get(b.getContext(), arith::FastMathFlags::reassoc);
}

/// Replaces `op` by its result when it has no elements (a batch of 0, no
/// output channels): nothing to compute, and the padded copies' slices of
/// an empty dim would be out of bounds.
template <typename OpT>
bool replacedWhenEmpty(OpT op, ConversionPatternRewriter &rewriter) {
  RankedTensorType type = op.getType();
  // A pool's `?` batch dims may be empty at run time: its generic runs no
  // iteration then, and its padded copy pads only the static spatial dims.
  if (!type.hasStaticShape() || type.getNumElements() != 0)
    return false;
  rewriter.replaceOp(op, emptyTensor(rewriter, op.getLoc(), type.getShape(),
                                     type.getElementType()));
  return true;
}

/// A sliding window along one spatial dim.
struct Window {
  int64_t kernel, stride, padding, dilation;
};

/// The sizes of the `?` dims of a conv's or pool's result `shape` over `x`:
/// batch dims are x's (a conv's channels are static), spatial ones count
/// the places of `windows` (h, w) along x's, which the run checked fit.
SmallVector<Value> resultSizes(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> shape,
                               std::array<Window, 2> windows) {
  SmallVector<Value> sizes;
  int64_t rank = shape.size();
  for (int64_t d = 0; d < rank; ++d) {
    if (!ShapedType::isDynamic(shape[d]))
      continue;
    Value size = dimSize(b, loc, x, d);
    if (d >= rank - 2) {
      const Window &w = windows[d - (rank - 2)];
      auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };
      // At least 0: a GPU plan is also evaluated at sizes of 0 (Vulkan
      // makes its pipelines so), where no window fits.
      Value room = arith::MaxSIOp::create(
          b, loc,
          arith::AddIOp::create(b, loc, size, c(2 * w.padding - w.dilation * (w.kernel - 1) - 1)),
          c(0));
      size = arith::AddIOp::create(b, loc, arith::DivSIOp::create(b, loc, room, c(w.stride)),
                                   c(1));
    }
    sizes.push_back(size);
  }
  return sizes;
}

/// `shape` with its `?` dims as `sizes`, in order (static dims as
/// attributes).
SmallVector<OpFoldResult> mixedShape(OpBuilder &b, ArrayRef<int64_t> shape, ValueRange sizes) {
  SmallVector<OpFoldResult> mixed;
  size_t next = 0;
  for (int64_t d : shape)
    mixed.push_back(ShapedType::isDynamic(d) ? OpFoldResult(sizes[next++]) : b.getIndexAttr(d));
  return mixed;
}

/// The product of two sizes, `?` where either is.
int64_t product(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) ? ShapedType::kDynamic : a * b;
}

/// `value` ([N, ..., H, W]) as [N, K, H*W], K the dims between: the
/// patches of `?` images as a GEMM operand, their two `?` spatial dims as
/// one (which reshapeTo cannot tell apart).
Value collapsePixels(OpBuilder &b, Location loc, Value value) {
  int64_t rank = cast<RankedTensorType>(value.getType()).getRank();
  SmallVector<ReassociationIndices> groups = {
      {0}, llvm::to_vector(llvm::seq<int64_t>(1, rank - 2)), {rank - 2, rank - 1}};
  return tensor::CollapseShapeOp::create(b, loc, value, groups);
}

/// A filled accumulator of `shape` in the compute type of `element`
/// (`sizes`: those of its `?` dims).
Value accumulator(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, Type element,
                  double init, ValueRange sizes = {}) {
  Type acc = computeFloatType(element);
  return linalg::FillOp::create(b, loc, scalarConstant(b, loc, acc, init),
                                emptyTensor(b, loc, shape, acc, sizes))
      .getResult(0);
}

/// The bias added to `sum` ([N, O, OH*OW], or [N, O, OH, OW]), rounded to
/// `element`, in the shape of the output ([N, O, OH, OW], `?` dims of
/// sizes `outSizes`): on the matmul kernels, the GEMM's fused epilogue.
Value convEpilogue(OpBuilder &b, Location loc, Value sum, Value bias,
                   ArrayRef<int64_t> outShape, Type element, ValueRange outSizes) {
  MLIRContext *ctx = b.getContext();
  int64_t rank = cast<RankedTensorType>(sum.getType()).getRank();
  SmallVector<int64_t> shape(outShape);
  SmallVector<OpFoldResult> mixed = mixedShape(b, outShape, outSizes);
  SmallVector<Value> sizes(outSizes);
  if (rank == 3) {
    // The flat sizes: the batch's and the pixel count's where `?`.
    shape = {outShape[0], outShape[1], product(outShape[2], outShape[3])};
    sizes.clear();
    if (ShapedType::isDynamic(shape[0]))
      sizes.push_back(cast<Value>(mixed[0]));
    if (ShapedType::isDynamic(shape[2]))
      sizes.push_back(arith::MulIOp::create(
          b, loc, getValueOrCreateConstantIndexOp(b, loc, mixed[2]),
          getValueOrCreateConstantIndexOp(b, loc, mixed[3])));
  }
  SmallVector<Value> inputs = {sum};
  SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(rank, ctx)};
  if (bias) {
    inputs.push_back(bias);
    maps.push_back(AffineMap::get(rank, 0, {getAffineDimExpr(1, ctx)}, ctx));
  }
  maps.push_back(AffineMap::getMultiDimIdentityMap(rank, ctx));
  Type acc = computeFloatType(element);
  Value init = emptyTensor(b, loc, shape, element, sizes);
  Value out = linalg::GenericOp::create(
                  b, loc, init.getType(), inputs, init, maps,
                  SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
                  [&](OpBuilder &nb, Location l, ValueRange args) {
                    Value v = args[0];
                    if (bias)
                      v = arith::AddFOp::create(nb, l, v,
                                                castScalar(nb, l, args[1], element, acc));
                    linalg::YieldOp::create(nb, l, castScalar(nb, l, v, acc, element));
                  })
                  .getResult(0);
  if (rank == 4)
    return out;
  return tensor::ExpandShapeOp::create(b, loc, RankedTensorType::get(outShape, element), out,
                                       SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}},
                                       mixed);
}

/// x [N, G*Cg, H, W], w [G*Og, Cg, KH, KW] -> [N, G*Og, OH, OW], with x
/// viewed as [N, G, Cg, H, W] (padded) and w as [G, Og, Cg, KH, KW].
struct Conv2dLowering : OpConversionPattern<Conv2dOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(Conv2dOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (replacedWhenEmpty(op, rewriter))
      return success();
    Location loc = op.getLoc();
    Type element = op.getType().getElementType();
    ArrayRef<int64_t> outShape = op.getType().getShape();
    ArrayRef<int64_t> wShape = op.getW().getType().getShape();
    int64_t groups = op.getGroups(), n = outShape[0], og = outShape[1] / groups,
            cg = wShape[1];
    ArrayRef<int64_t> stride = op.getStride(), padding = op.getPadding(),
                      dilation = op.getDilation();
    // `?` channels are the weights' (the run checks).
    Value input = adaptor.getX();
    if (op.getX().getType().isDynamicDim(1)) {
      SmallVector<int64_t> shape(op.getX().getType().getShape());
      shape[1] = groups * cg;
      input = tensor::CastOp::create(
          rewriter, loc, RankedTensorType::get(shape, op.getX().getType().getElementType()),
          input);
    }
    SmallVector<Value> outSizes =
        resultSizes(rewriter, loc, input, outShape,
                    {Window{wShape[2], stride[0], padding[0], dilation[0]},
                     Window{wShape[3], stride[1], padding[1], dilation[1]}});
    Value w = reshapeTo(rewriter, loc, adaptor.getW(), {groups, og, cg, wShape[2], wShape[3]});
    // The patches hold Cg*KH*KW / Og elements per output element (run-time
    // sizes are checked when the buffers are sized).
    int64_t patchElements = 1;
    bool patchesFit = llvm::all_of(
        std::array{cg, wShape[2], wShape[3], n, outShape[2], outShape[3], groups,
                   int64_t(8)}, // bytes per element at most
        [&](int64_t d) {
          return ShapedType::isDynamic(d) || !llvm::MulOverflow(patchElements, d, patchElements);
        });
    bool staticImages = llvm::none_of(outShape.drop_front(), ShapedType::isDynamic);
    // Grouped convs of `?` images go direct: the matmul lowering's product
    // [N*G, Og, OH*OW] would expand into two `?` batch dims and a `?` one
    // (reshapeTo takes one `?` a group).
    bool gemmForm = og != 1 && patchesFit && (staticImages || groups == 1);
    bool im2col = wShape[2] != 1 || wShape[3] != 1 || stride[0] != 1 || stride[1] != 1;
    Value sum;
    if (llvm::is_contained(op.getX().getType().getShape().drop_front(), 0) ||
        op.getX().getType().getDimSize(0) == 0) {
      // No input channels: every window sums nothing (the padded copies'
      // slices of the empty dim would be out of bounds); the bias remains.
      sum = accumulator(rewriter, loc, {n, outShape[1], outShape[2] * outShape[3]}, element,
                        0.0, outSizes); // static shapes only
    } else if (gemmForm && im2col) {
      // The patches right before the matmul, which can then gather them.
      Value permuted = permuteWeights(rewriter, loc, w);
      Value xt = channelsLast(rewriter, loc, op, input);
      sum = gemm(rewriter, loc, op, permuted, patches(rewriter, loc, op, xt, outSizes));
    } else {
      Value x = padSpatial(rewriter, loc, input, padding, element, 0.0);
      ArrayRef<int64_t> padded = cast<RankedTensorType>(x.getType()).getShape();
      x = reshapeTo(rewriter, loc, x, {n, groups, cg, padded[2], padded[3]});
      // A 1x1 stride-1 conv's patches are the padded input itself.
      // The direct form's sum of `?` images stays 4-d (nothing to collapse
      // and expand again).
      sum = gemmForm ? gemm(rewriter, loc, op, w, x)
                     : reshapeTo(rewriter, loc, direct(rewriter, loc, op, x, w, outSizes),
                                 staticImages ? ArrayRef<int64_t>{n, outShape[1],
                                                                  outShape[2] * outShape[3]}
                                              : outShape);
    }
    rewriter.replaceOp(op, convEpilogue(rewriter, loc, sum, adaptor.getBias(), outShape,
                                        element, outSizes));
    return success();
  }

  /// One generic over (n, g, og, oh, ow) with (c, kh, kw) as reductions:
  /// [N, G, Og, OH, OW] (`?` dims of sizes `outSizes`).
  Value direct(OpBuilder &b, Location loc, Conv2dOp op, Value x, Value w,
               ValueRange outSizes) const {
    MLIRContext *ctx = getContext();
    Type element = op.getType().getElementType();
    Type acc = computeFloatType(element);
    ArrayRef<int64_t> outShape = op.getType().getShape();
    ArrayRef<int64_t> stride = op.getStride(), dilation = op.getDilation();
    int64_t groups = op.getGroups();
    SmallVector<int64_t> grouped = {outShape[0], groups, outShape[1] / groups, outShape[2],
                                    outShape[3]};
    Value init = accumulator(b, loc, grouped, element, 0.0, outSizes);
    ArrayRef<int64_t> xShape = cast<RankedTensorType>(x.getType()).getShape(),
                      wShape = cast<RankedTensorType>(w.getType()).getShape();
    AffineExpr dn, dg, dog, doh, dow, dc, dkh, dkw;
    bindDims(ctx, dn, dg, dog, doh, dow, dc, dkh, dkw);
    SmallVector<AffineMap> maps = {
        AffineMap::get(8, 0,
                       {dn, dg, dc,
                        windowIndex(doh, dkh, stride[0], dilation[0], wShape[3], xShape[3]),
                        windowIndex(dow, dkw, stride[1], dilation[1], wShape[4], xShape[4])},
                       ctx),
        AffineMap::get(8, 0, {dg, dog, dc, dkh, dkw}, ctx),
        AffineMap::get(8, 0, {dn, dg, dog, doh, dow}, ctx)};
    SmallVector<utils::IteratorType> iterators(5, utils::IteratorType::parallel);
    iterators.append(3, utils::IteratorType::reduction);
    Value sum = linalg::GenericOp::create(
                    b, loc, init.getType(), ValueRange{x, w}, init, maps, iterators,
                    [&](OpBuilder &nb, Location l, ValueRange args) {
                      Value xv = castScalar(nb, l, args[0], element, acc);
                      Value wv = castScalar(nb, l, args[1], element, acc);
                      Value product = arith::MulFOp::create(nb, l, xv, wv);
                      linalg::YieldOp::create(nb, l,
                                              arith::AddFOp::create(nb, l, args[2], product,
                                                                    reassociable(nb))
                                                  .getResult());
                    })
                    .getResult(0);
    return sum;
  }

  /// x [N, G*Cg, H, W] as [N, H + 2 ph, W + 2 pw, G, Cg]: channels last,
  /// zero around the image, by one generic (kConvImageAttr) that reads x
  /// inside the image (a fill, a transpose and a copy into the padded
  /// buffer were three passes over memory: 35 us each for a ResNet-50
  /// 56x56 bf16 batch on the H200).
  Value channelsLast(OpBuilder &b, Location loc, Conv2dOp op, Value x) const {
    MLIRContext *ctx = getContext();
    Type element = op.getType().getElementType();
    ArrayRef<int64_t> xShape = cast<RankedTensorType>(x.getType()).getShape(),
                      pad = op.getPadding();
    int64_t groups = op.getGroups(), n = xShape[0], cg = xShape[1] / groups, h = xShape[2],
            w = xShape[3];
    auto padSize = [](int64_t size, int64_t p) {
      return ShapedType::isDynamic(size) ? size : size + 2 * p;
    };
    SmallVector<int64_t> padded = {n, padSize(h, pad[0]), padSize(w, pad[1]), groups, cg};
    SmallVector<Value> paddedSizes;
    for (auto [d, p] : {std::pair<int64_t, int64_t>{0, 0}, {2, pad[0]}, {3, pad[1]}})
      if (ShapedType::isDynamic(xShape[d]))
        paddedSizes.push_back(
            b.createOrFold<arith::AddIOp>(loc, tensor::DimOp::create(b, loc, x, d),
                                          arith::ConstantIndexOp::create(b, loc, 2 * p)));
    Value init = emptyTensor(b, loc, padded, element, paddedSizes);
    Value height = b.createOrFold<tensor::DimOp>(loc, x, 2),
          width = b.createOrFold<tensor::DimOp>(loc, x, 3);
    auto image = linalg::GenericOp::create(
        b, loc, init.getType(), ValueRange{}, init,
        SmallVector<AffineMap>{AffineMap::getMultiDimIdentityMap(5, ctx)},
        SmallVector<utils::IteratorType>(5, utils::IteratorType::parallel),
        [&](OpBuilder &nb, Location l, ValueRange) {
          auto index = [&](int64_t d) { return linalg::IndexOp::create(nb, l, d); };
          auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(nb, l, v); };
          // (y, z): the image's pixel; `inside` where it is one.
          Value y = arith::SubIOp::create(nb, l, index(1), c(pad[0]));
          Value z = arith::SubIOp::create(nb, l, index(2), c(pad[1]));
          auto within = [&](Value i, Value size) {
            return arith::AndIOp::create(
                nb, l, arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sge, i, c(0)),
                arith::CmpIOp::create(nb, l, arith::CmpIPredicate::slt, i, size));
          };
          Value inside = arith::AndIOp::create(nb, l, within(y, height), within(z, width));
          Value channel =
              arith::AddIOp::create(nb, l, arith::MulIOp::create(nb, l, index(3), c(cg)), index(4));
          // (A read, not a select of one: an image of no rows has
          // no element to read.)
          Value imageIndex = index(0);
          auto read = scf::IfOp::create(
              nb, l, inside,
              [&](OpBuilder &tb, Location tl) {
                scf::YieldOp::create(
                    tb, tl,
                    tensor::ExtractOp::create(tb, tl, x, ValueRange{imageIndex, channel, y, z})
                        .getResult());
              },
              [&](OpBuilder &eb, Location el) {
                scf::YieldOp::create(eb, el, scalarConstant(eb, el, element, 0.0));
              });
          linalg::YieldOp::create(nb, l, read.getResult(0));
        });
    image->setAttr(kConvImageAttr, UnitAttr::get(ctx));
    return image.getResult(0);
  }

  /// w [G, Og, Cg, KH, KW] as [G, Og, KH, KW, Cg], the patches' K order.
  Value permuteWeights(OpBuilder &b, Location loc, Value w) const {
    MLIRContext *ctx = getContext();
    ArrayRef<int64_t> s = cast<RankedTensorType>(w.getType()).getShape();
    AffineExpr dg, dog, di, dj, dc;
    bindDims(ctx, dg, dog, di, dj, dc);
    Value init = emptyTensor(b, loc, {s[0], s[1], s[3], s[4], s[2]},
                             cast<RankedTensorType>(w.getType()).getElementType());
    return copyGeneric(b, loc, w, init, AffineMap::get(5, 0, {dg, dog, dc, di, dj}, ctx));
  }

  /// im2col of channels-last `x` [N, H, W, G, Cg] (padded):
  /// patches[n, g, i, j, c, y, z] = x[n, y * sh + i * dh, z * sw + j * dw, g, c],
  /// [N, G, KH, KW, Cg, OH, OW].
  Value patches(OpBuilder &b, Location loc, Conv2dOp op, Value x, ValueRange outSizes) const {
    MLIRContext *ctx = getContext();
    ArrayRef<int64_t> outShape = op.getType().getShape();
    ArrayRef<int64_t> wShape = op.getW().getType().getShape();
    ArrayRef<int64_t> xShape = cast<RankedTensorType>(x.getType()).getShape();
    ArrayRef<int64_t> stride = op.getStride(), dilation = op.getDilation();
    AffineExpr dn, dg, di, dj, dc, dy, dz;
    bindDims(ctx, dn, dg, di, dj, dc, dy, dz);
    Value init = emptyTensor(b, loc,
                             {outShape[0], int64_t(op.getGroups()), wShape[2], wShape[3], wShape[1],
                              outShape[2], outShape[3]},
                             op.getType().getElementType(), outSizes);
    return copyGeneric(b, loc, x, init,
                       AffineMap::get(7, 0,
                                      {dn,
                                       windowIndex(dy, di, stride[0], dilation[0], wShape[2],
                                                   xShape[1]),
                                       windowIndex(dz, dj, stride[1], dilation[1], wShape[3],
                                                   xShape[2]),
                                       dg, dc},
                                      ctx));
  }

  /// A kiln.matmul per image and group: the weights `w` ([G, Og, ...], K
  /// = the product of the rest) times the image's `patches` ([N, G, ..., OH,
  /// OW], K in the same order) is [G, Og, OH*OW], NCHW as it stands. With
  /// one group the weights are one matrix every image shares. The sum is
  /// [N, O, OH*OW].
  Value gemm(OpBuilder &b, Location loc, Conv2dOp op, Value w, Value patches) const {
    Type acc = computeFloatType(op.getType().getElementType());
    ArrayRef<int64_t> outShape = op.getType().getShape();
    ArrayRef<int64_t> wShape = op.getW().getType().getShape();
    int64_t groups = op.getGroups(), n = outShape[0], og = outShape[1] / groups,
            k = wShape[1] * wShape[2] * wShape[3], pixels = product(outShape[2], outShape[3]);
    SmallVector<int64_t> lhs = {og, k}, rhs = {n, k, pixels}, shape = {n, og, pixels};
    if (groups > 1) {
      lhs.insert(lhs.begin(), groups);
      rhs.insert(rhs.begin() + 1, groups);
      shape.insert(shape.begin() + 1, groups);
    }
    // Static images reshape as they always have; `?` ones (one group)
    // collapse their two spatial dims into one.
    bool staticImages = llvm::none_of(outShape.drop_front(), ShapedType::isDynamic);
    Value rhsValue =
        staticImages ? reshapeTo(b, loc, patches, rhs) : collapsePixels(b, loc, patches);
    Value sum = MatmulOp::create(b, loc, RankedTensorType::get(shape, acc),
                                 reshapeTo(b, loc, w, lhs), rhsValue);
    return reshapeTo(b, loc, sum, {n, outShape[1], pixels});
  }

  /// `init` written with `input` read through `map`, a copy.
  static Value copyGeneric(OpBuilder &b, Location loc, Value input, Value init,
                           AffineMap map) {
    unsigned rank = map.getNumDims();
    return linalg::GenericOp::create(
               b, loc, init.getType(), input, init,
               SmallVector<AffineMap>{map, AffineMap::getMultiDimIdentityMap(rank, map.getContext())},
               SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
               [](OpBuilder &nb, Location l, ValueRange args) {
                 linalg::YieldOp::create(nb, l, args[0]);
               })
        .getResult(0);
  }
};

/// max_pool2d / avg_pool2d on x [batch..., H, W]: iteration dims (batch...,
/// oh, ow, kh, kw); a [KH, KW] operand gives the window dims their range.
template <typename OpT, bool isMax>
struct PoolToGeneric : OpConversionPattern<OpT> {
  using OpConversionPattern<OpT>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpT op, typename OpT::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (replacedWhenEmpty(op, rewriter))
      return success();
    Location loc = op.getLoc();
    MLIRContext *ctx = this->getContext();
    Type element = op.getType().getElementType();
    Type acc = computeFloatType(element);
    ArrayRef<int64_t> outShape = op.getType().getShape();
    ArrayRef<int64_t> kernel = op.getKernel();
    ArrayRef<int64_t> stride = op.getStride().value_or(kernel);
    double identity = isMax ? -std::numeric_limits<double>::infinity() : 0.0;
    Value x = padSpatial(rewriter, loc, adaptor.getX(), op.getPadding(), element, identity);
    SmallVector<Value> sizes = resultSizes(
        rewriter, loc, adaptor.getX(), outShape,
        {Window{kernel[0], stride[0], op.getPadding()[0], 1},
         Window{kernel[1], stride[1], op.getPadding()[1], 1}});
    Value init = accumulator(rewriter, loc, outShape, element, identity, sizes);
    Value window = emptyTensor(rewriter, loc, kernel, acc);

    int64_t rank = outShape.size(), dims = rank + 2;
    AffineExpr kh = getAffineDimExpr(rank, ctx), kw = getAffineDimExpr(rank + 1, ctx);
    SmallVector<AffineExpr> xExprs, outExprs;
    for (int64_t d = 0; d < rank; ++d)
      outExprs.push_back(getAffineDimExpr(d, ctx));
    xExprs.assign(outExprs.begin(), outExprs.end() - 2);
    ArrayRef<int64_t> xShape = cast<RankedTensorType>(x.getType()).getShape();
    xExprs.push_back(
        windowIndex(outExprs[rank - 2], kh, stride[0], 1, kernel[0], xShape[rank - 2]));
    xExprs.push_back(
        windowIndex(outExprs[rank - 1], kw, stride[1], 1, kernel[1], xShape[rank - 1]));
    SmallVector<AffineMap> maps = {AffineMap::get(dims, 0, xExprs, ctx),
                                   AffineMap::get(dims, 0, {kh, kw}, ctx),
                                   AffineMap::get(dims, 0, outExprs, ctx)};
    SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
    iterators.append(2, utils::IteratorType::reduction);
    Value reduced =
        linalg::GenericOp::create(
            rewriter, loc, init.getType(), ValueRange{x, window}, init, maps, iterators,
            [&](OpBuilder &b, Location l, ValueRange args) {
              Value v = castScalar(b, l, args[0], element, acc);
              Value r = isMax ? arith::MaximumFOp::create(b, l, args[2], v).getResult()
                              : arith::AddFOp::create(b, l, args[2], v, reassociable(b))
                                    .getResult();
              linalg::YieldOp::create(b, l, r);
            })
            .getResult(0);
    if (isMax && acc == element) {
      rewriter.replaceOp(op, reduced);
      return success();
    }
    double count = static_cast<double>(kernel[0] * kernel[1]);
    rewriter.replaceOp(
        op, buildElementwise(rewriter, loc, outShape, element, reduced,
                             [&](OpBuilder &b, Location l, ValueRange args) {
                               Value v = args[0];
                               if (!isMax)
                                 v = arith::DivFOp::create(
                                     b, l, v, scalarConstant(b, l, acc, count));
                               return castScalar(b, l, v, acc, element);
                             }));
    return success();
  }
};

} // namespace

void populateConvPatterns(TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<Conv2dLowering, PoolToGeneric<MaxPool2dOp, true>,
               PoolToGeneric<AvgPool2dOp, false>>(converter, patterns.getContext());
}

} // namespace kiln::to_linalg
