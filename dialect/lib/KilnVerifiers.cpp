//===- KilnVerifiers.cpp - verification rules of the kiln ops ------------===//
//
// Every rule names the problem: which operand or attribute, and what was
// expected. Nothing malformed may reach lowering.
//
//===----------------------------------------------------------------------===//
#include "kiln/Dialect/KilnOps.h"
#include "kiln/Dialect/InferResultType.h"

#include "mlir/IR/TypeUtilities.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace kiln;

namespace {
RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

std::string shapeString(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(shape)) {
    if (i)
      s += ", ";
    s += ShapedType::isDynamic(d) ? "?" : std::to_string(d);
  }
  return s + "]";
}

LogicalResult verifyShapeIs(Operation *op, Value value, ArrayRef<int64_t> want,
                            StringRef what) {
  ArrayRef<int64_t> got = tensorType(value).getShape();
  // A result's `?` must be one the operands leave open: where they fix the
  // size, it is a wrong result type (and lowering it could not end).
  bool result = value.getDefiningOp() == op;
  if (got.size() == want.size() &&
      llvm::all_of(llvm::zip(got, want), [&](auto p) {
        auto [g, w] = p;
        return g == w || ShapedType::isDynamic(w) || (ShapedType::isDynamic(g) && !result);
      }))
    return success();
  return op->emitOpError() << what << " has shape " << shapeString(got)
                           << ", expected " << shapeString(want);
}

LogicalResult verifyDim(Operation *op, int64_t dim, int64_t rank,
                        StringRef attr) {
  if (dim < 0 || dim >= rank)
    return op->emitOpError() << "attribute '" << attr << "' = " << dim
                             << " is out of range for rank " << rank;
  return success();
}

LogicalResult verifyDimList(Operation *op, ArrayRef<int64_t> dims, int64_t rank,
                            StringRef attr) {
  llvm::SmallSet<int64_t, 8> seen;
  for (int64_t d : dims) {
    if (failed(verifyDim(op, d, rank, attr)))
      return failure();
    if (!seen.insert(d).second)
      return op->emitOpError() << "attribute '" << attr << "' repeats dim "
                               << d;
  }
  return success();
}

LogicalResult verifySameElementType(Operation *op, Value a, Value b,
                                    StringRef whatA, StringRef whatB) {
  Type ea = tensorType(a).getElementType(), eb = tensorType(b).getElementType();
  if (ea != eb)
    return op->emitOpError() << whatA << " element type " << ea
                             << " differs from " << whatB << " element type "
                             << eb << " (kiln does no implicit promotion)";
  return success();
}

bool isFloat(Type t) {
  std::optional<unsigned> kind = elementKindOf(t);
  return kind && (*kind & (ElementKind::Float | ElementKind::Float8));
}

} // namespace

std::optional<unsigned> kiln::elementKindOf(Type type) {
  if (type.isF64() || type.isF32() || type.isF16() || type.isBF16())
    return ElementKind::Float;
  if (isa<Float8E4M3FNType, Float8E5M2Type>(type))
    return ElementKind::Float8;
  auto intType = dyn_cast<IntegerType>(type);
  if (!intType)
    return std::nullopt;
  unsigned width = intType.getWidth();
  if (width == 1 && intType.isSignless())
    return ElementKind::Bool;
  if (width != 8 && width != 16 && width != 32 && width != 64)
    return std::nullopt;
  if (intType.isSignless())
    return ElementKind::Signed;
  if (intType.isUnsigned())
    return ElementKind::Unsigned;
  return std::nullopt;
}

std::string kiln::describeElementKinds(unsigned kinds) {
  SmallVector<StringRef> names;
  if (kinds & ElementKind::Float)
    names.push_back("float");
  if (kinds & ElementKind::Signed)
    names.push_back("signed integer");
  if (kinds & ElementKind::Unsigned)
    names.push_back("unsigned integer");
  if (kinds & ElementKind::Bool)
    names.push_back("i1");
  if (kinds & ElementKind::Float8)
    names.push_back("f8");
  return llvm::join(names, " or ");
}

std::optional<SmallVector<int64_t>>
kiln::broadcastShapes(ArrayRef<ArrayRef<int64_t>> shapes,
                      int64_t *badDimFromRight) {
  size_t rank = 0;
  for (ArrayRef<int64_t> s : shapes)
    rank = std::max(rank, s.size());
  SmallVector<int64_t> result(rank, 1);
  for (ArrayRef<int64_t> s : shapes) {
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t &r = result[rank - 1 - i];
      int64_t d = s[s.size() - 1 - i];
      if (d == 1 || d == r)
        continue;
      if (r == 1 || ShapedType::isDynamic(r)) {
        r = d;
        continue;
      }
      if (ShapedType::isDynamic(d))
        continue;
      if (badDimFromRight)
        *badDimFromRight = static_cast<int64_t>(i);
      return std::nullopt;
    }
  }
  return result;
}

RankedTensorType kiln::broadcastResultType(ValueRange operands,
                                           Type elementType) {
  SmallVector<ArrayRef<int64_t>> shapes;
  for (Value v : operands)
    shapes.push_back(tensorType(v).getShape());
  auto shape = broadcastShapes(shapes);
  assert(shape && "operands must broadcast");
  return RankedTensorType::get(*shape, elementType);
}

RankedTensorType kiln::reducedType(Value x, ArrayRef<int64_t> dims,
                                   bool keepDims, Type elementType) {
  return RankedTensorType::get(
      reducedShape(tensorType(x).getShape(), dims, keepDims), elementType);
}

RankedTensorType kiln::withShape(Value x, ArrayRef<int64_t> shape) {
  return RankedTensorType::get(shape, tensorType(x).getElementType());
}

LogicalResult kiln::verifyKilnElementTypes(Operation *op) {
  auto check = [&](Value v, StringRef what, unsigned index) -> LogicalResult {
    Type elem = tensorType(v).getElementType();
    if (elementKindOf(elem))
      return success();
    return op->emitOpError() << what << " #" << index << " has element type "
                             << elem
                             << ", which kiln does not support (use f64 f32 "
                                "f16 bf16 f8E4M3FN f8E5M2, i8-i64, ui8-ui64 "
                                "or i1)";
  };
  for (auto [i, v] : llvm::enumerate(op->getOperands()))
    if (failed(check(v, "operand", i)))
      return failure();
  for (auto [i, v] : llvm::enumerate(op->getResults()))
    if (failed(check(v, "result", i)))
      return failure();
  return success();
}

LogicalResult kiln::verifyElementKind(Operation *op, Value value,
                                      unsigned kinds, StringRef what) {
  Type elem = tensorType(value).getElementType();
  std::optional<unsigned> kind = elementKindOf(elem);
  if (kind && (*kind & kinds))
    return success();
  return op->emitOpError() << what << " element type " << elem
                           << " is not supported: expected "
                           << describeElementKinds(kinds);
}

LogicalResult
kiln::verifyTensorSize(function_ref<InFlightDiagnostic()> emitError, Type type,
                       StringRef what) {
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped || !shaped.hasRank())
    return success();
  int64_t count = 1;
  for (int64_t d : shaped.getShape())
    if (!ShapedType::isDynamic(d) && llvm::MulOverflow(count, d, count))
      return emitError() << what << " type " << type
                         << " is too large: its element count overflows int64";
  Type elem = shaped.getElementType();
  if (!elem.isIntOrFloat())
    return success();
  int64_t bytes = 0;
  if (llvm::MulOverflow(
          count, static_cast<int64_t>(llvm::divideCeil(elem.getIntOrFloatBitWidth(), 8)),
          bytes))
    return emitError() << what << " type " << type << " is too large: " << count
                       << " elements overflow int64 as a size in bytes";
  return success();
}

LogicalResult kiln::verifyKilnOp(Operation *op,
                                 ArrayRef<StringRef> attributeNames) {
  for (NamedAttribute attr : op->getAttrs()) {
    if (llvm::is_contained(attributeNames, attr.getName().strref()) ||
        attr.getName() == kSizeSourcesAttrName)
      continue;
    InFlightDiagnostic diag = op->emitOpError()
                              << "has no attribute '" << attr.getName().strref()
                              << "'";
    if (attributeNames.empty())
      diag << " (it takes none)";
    else
      diag << " (its attributes: " << llvm::join(attributeNames, ", ") << ")";
    return diag;
  }
  auto emit = [&] { return op->emitOpError(); };
  for (auto [i, v] : llvm::enumerate(op->getOperands()))
    if (failed(verifyTensorSize(emit, v.getType(),
                                "operand #" + std::to_string(i))))
      return failure();
  for (auto [i, v] : llvm::enumerate(op->getResults()))
    if (failed(verifyTensorSize(emit, v.getType(),
                                "result #" + std::to_string(i))))
      return failure();
  return success();
}

LogicalResult kiln::OpTrait::verifyBroadcastBinary(Operation *op,
                                                   unsigned kinds,
                                                   bool isCompare) {
  if (failed(verifyKilnElementTypes(op)))
    return failure();
  Value lhs = op->getOperand(0), rhs = op->getOperand(1);
  if (failed(verifySameElementType(op, lhs, rhs, "lhs", "rhs")) ||
      failed(verifyElementKind(op, lhs, kinds, "operand")))
    return failure();
  int64_t badDim = 0;
  auto shape = broadcastShapes(
      {tensorType(lhs).getShape(), tensorType(rhs).getShape()}, &badDim);
  if (!shape)
    return op->emitOpError()
           << "operands are not broadcast-compatible: lhs "
           << shapeString(tensorType(lhs).getShape()) << " vs rhs "
           << shapeString(tensorType(rhs).getShape()) << " (dim "
           << badDim << " from the right)";
  Type resultElem = tensorType(op->getResult(0)).getElementType();
  Type wantElem = isCompare ? IntegerType::get(op->getContext(), 1)
                            : tensorType(lhs).getElementType();
  if (resultElem != wantElem)
    return op->emitOpError() << "result element type " << resultElem
                             << " should be " << wantElem;
  return verifyShapeIs(op, op->getResult(0), *shape, "result");
}

LogicalResult GeluOp::verify() {
  if (getApproximate() != "none" && getApproximate() != "tanh")
    return emitOpError() << "attribute 'approximate' must be \"none\" or "
                            "\"tanh\", got \""
                         << getApproximate() << "\"";
  return success();
}

LogicalResult ClampOp::verify() {
  if (!getMin() && !getMax())
    return emitOpError() << "needs at least one of 'min' and 'max'";
  if (getMin() && getMax() &&
      getMin()->convertToDouble() > getMax()->convertToDouble())
    return emitOpError() << "attribute 'min' = " << getMin()->convertToDouble()
                         << " exceeds 'max' = " << getMax()->convertToDouble();
  return success();
}

LogicalResult IsnanOp::verify() {
  if (failed(verifyKilnElementTypes(*this)) ||
      failed(verifyElementKind(*this, getX(), ElementKind::Float, "operand")))
    return failure();
  if (!getType().getElementType().isInteger(1))
    return emitOpError() << "result element type must be i1";
  return verifyShapeIs(*this, getResult(), getX().getType().getShape(),
                       "result");
}

LogicalResult CastOp::verify() {
  if (failed(verifyKilnElementTypes(*this)))
    return failure();
  return verifyShapeIs(*this, getResult(), getX().getType().getShape(),
                       "result");
}

LogicalResult SelectOp::verify() {
  if (failed(verifyKilnElementTypes(*this)))
    return failure();
  if (!getCond().getType().getElementType().isInteger(1))
    return emitOpError() << "condition element type must be i1, got "
                         << getCond().getType().getElementType();
  if (failed(verifySameElementType(*this, getA(), getB(), "a", "b")) ||
      failed(verifySameElementType(*this, getA(), getResult(), "a", "result")))
    return failure();
  int64_t badDim = 0;
  auto shape = broadcastShapes({getCond().getType().getShape(),
                                getA().getType().getShape(),
                                getB().getType().getShape()},
                               &badDim);
  if (!shape)
    return emitOpError() << "operands are not broadcast-compatible (dim "
                         << badDim << " from the right)";
  return verifyShapeIs(*this, getResult(), *shape, "result");
}

LogicalResult FillOp::verify() { return verifyKilnElementTypes(*this); }

LogicalResult IotaOp::verify() {
  if (failed(verifyKilnElementTypes(*this)) ||
      failed(verifyElementKind(*this, getResult(),
                               ElementKind::Float | ElementKind::Signed |
                                   ElementKind::Unsigned,
                               "result")))
    return failure();
  return verifyDim(*this, getDim(), getType().getRank(), "dim");
}

namespace {
LogicalResult verifyRandom(Operation *op, Value seed, Value result) {
  if (failed(verifyKilnElementTypes(op)))
    return failure();
  auto seedType = tensorType(seed);
  if (seedType.getRank() != 0 || !seedType.getElementType().isSignlessInteger(64))
    return op->emitOpError() << "seed must be tensor<i64>, got " << seedType;
  return verifyElementKind(op, result, ElementKind::Float, "result");
}
} // namespace

LogicalResult RandomUniformOp::verify() {
  if (failed(verifyRandom(*this, getSeed(), getResult())))
    return failure();
  if (getLow().convertToDouble() > getHigh().convertToDouble())
    return emitOpError() << "attribute 'low' exceeds 'high'";
  return success();
}

LogicalResult RandomNormalOp::verify() {
  if (failed(verifyRandom(*this, getSeed(), getResult())))
    return failure();
  if (getStd().convertToDouble() < 0)
    return emitOpError() << "attribute 'std' must be non-negative";
  return success();
}

namespace {
LogicalResult verifyMoveElementType(Operation *op, Value x, Value result) {
  if (failed(verifyKilnElementTypes(op)))
    return failure();
  return verifySameElementType(op, x, result, "operand", "result");
}
} // namespace

LogicalResult ReshapeOp::verify() {
  if (failed(verifyMoveElementType(*this, getX(), getResult())))
    return failure();
  auto in = getX().getType();
  if (in.hasStaticShape() && getType().hasStaticShape() &&
      in.getNumElements() != getType().getNumElements())
    return emitOpError() << "cannot reshape " << in.getNumElements()
                         << " elements " << shapeString(in.getShape())
                         << " into " << getType().getNumElements()
                         << " elements " << shapeString(getType().getShape());
  return success();
}

LogicalResult BroadcastOp::verify() {
  if (failed(verifyMoveElementType(*this, getX(), getResult())))
    return failure();
  ArrayRef<int64_t> in = getX().getType().getShape(),
                    out = getType().getShape();
  if (in.size() > out.size())
    return emitOpError() << "cannot broadcast rank " << in.size()
                         << " to lower rank " << out.size();
  for (size_t i = 0; i < in.size(); ++i) {
    int64_t d = in[in.size() - 1 - i], r = out[out.size() - 1 - i];
    if (d != 1 && d != r)
      return emitOpError() << "cannot broadcast " << shapeString(in) << " to "
                           << shapeString(out) << ": dim "
                           << in.size() - 1 - i << " is " << d;
  }
  return success();
}

LogicalResult TransposeOp::verify() {
  if (failed(verifyMoveElementType(*this, getX(), getResult())))
    return failure();
  int64_t rank = getX().getType().getRank();
  ArrayRef<int64_t> perm = getPerm();
  if (static_cast<int64_t>(perm.size()) != rank)
    return emitOpError() << "attribute 'perm' has " << perm.size()
                         << " entries for rank " << rank;
  if (failed(verifyDimList(*this, perm, rank, "perm")))
    return failure();
  SmallVector<int64_t> want;
  for (int64_t p : perm)
    want.push_back(getX().getType().getDimSize(p));
  return verifyShapeIs(*this, getResult(), want, "result");
}

LogicalResult SliceOp::verify() {
  if (failed(verifyMoveElementType(*this, getX(), getResult())))
    return failure();
  auto in = getX().getType();
  size_t rank = in.getRank();
  ArrayRef<int64_t> start = getStart(), stop = getStop();
  SmallVector<int64_t> step(rank, 1);
  if (getStep())
    step.assign(getStep()->begin(), getStep()->end());
  if (start.size() != rank || stop.size() != rank || step.size() != rank)
    return emitOpError() << "attributes 'start', 'stop' and 'step' need one "
                            "entry per dim (rank "
                         << rank << ")";
  SmallVector<int64_t> want;
  for (size_t d = 0; d < rank; ++d) {
    if (step[d] <= 0)
      return emitOpError() << "step of dim " << d << " is " << step[d]
                           << ", must be positive";
    int64_t size = in.getDimSize(d);
    if (start[d] < 0 || start[d] > stop[d] ||
        (!ShapedType::isDynamic(size) && stop[d] > size))
      return emitOpError() << "slice [" << start[d] << ", " << stop[d]
                           << ") of dim " << d << " is outside [0, " << size
                           << "]";
    // ceil((stop - start) / step), without overflow for huge steps.
    int64_t span = stop[d] - start[d];
    want.push_back(span / step[d] + (span % step[d] != 0));
  }
  return verifyShapeIs(*this, getResult(), want, "result");
}

LogicalResult PadOp::verify() {
  if (failed(verifyMoveElementType(*this, getX(), getResult())))
    return failure();
  auto in = getX().getType();
  size_t rank = in.getRank();
  if (getLow().size() != rank || getHigh().size() != rank)
    return emitOpError() << "attributes 'low' and 'high' need one entry per "
                            "dim (rank "
                         << rank << ")";
  SmallVector<int64_t> want;
  for (size_t d = 0; d < rank; ++d) {
    if (getLow()[d] < 0 || getHigh()[d] < 0)
      return emitOpError() << "padding of dim " << d << " is negative";
    int64_t size = in.getDimSize(d), padded = size, both;
    // (A `?` dim's padding is added at run time, where its sum is checked.)
    if (llvm::AddOverflow(getLow()[d], getHigh()[d], both) ||
        (!ShapedType::isDynamic(size) && llvm::AddOverflow(size, both, padded)))
      return emitOpError() << "padded size of dim " << d << " overflows int64";
    want.push_back(padded);
  }
  return verifyShapeIs(*this, getResult(), want, "result");
}

LogicalResult FlipOp::verify() {
  if (failed(verifyMoveElementType(*this, getX(), getResult())) ||
      failed(verifyDimList(*this, getDims(), getX().getType().getRank(),
                           "dims")))
    return failure();
  return verifyShapeIs(*this, getResult(), getX().getType().getShape(),
                       "result");
}

LogicalResult ConcatOp::verify() {
  if (failed(verifyKilnElementTypes(*this)))
    return failure();
  if (getXs().empty())
    return emitOpError() << "needs at least one operand";
  auto first = cast<RankedTensorType>(getXs().front().getType());
  int64_t rank = first.getRank();
  if (failed(verifyDim(*this, getDim(), rank, "dim")))
    return failure();
  SmallVector<int64_t> want(first.getShape());
  want[getDim()] = 0;
  for (auto [i, x] : llvm::enumerate(getXs())) {
    auto type = tensorType(x);
    if (failed(verifySameElementType(*this, getXs().front(), x, "operand #0",
                                     "operand #" + std::to_string(i))))
      return failure();
    if (type.getRank() != rank)
      return emitOpError() << "operand #" << i << " has rank "
                           << type.getRank() << ", expected " << rank;
    // Off `dim`, a `?` is the other operands' size (checked at run time).
    for (int64_t d = 0; d < rank; ++d) {
      int64_t size = type.getDimSize(d);
      if (d == getDim() || ShapedType::isDynamic(size))
        continue;
      if (ShapedType::isDynamic(want[d]))
        want[d] = size;
      else if (size != want[d])
        return emitOpError() << "operand #" << i << " has size " << size
                             << " in dim " << d << ", expected " << want[d];
    }
    int64_t size = type.getDimSize(getDim()), &sum = want[getDim()];
    if (ShapedType::isDynamic(size) || ShapedType::isDynamic(sum))
      sum = ShapedType::kDynamic;
    else if (llvm::AddOverflow(sum, size, sum))
      return emitOpError() << "concatenated size of dim " << getDim()
                           << " overflows int64";
  }
  if (failed(verifySameElementType(*this, getXs().front(), getResult(),
                                   "operand", "result")))
    return failure();
  return verifyShapeIs(*this, getResult(), want, "result");
}

namespace {
LogicalResult verifyIndexTensor(Operation *op, Value idx) {
  Type elem = tensorType(idx).getElementType();
  if (!elem.isSignlessInteger(32) && !elem.isSignlessInteger(64))
    return op->emitOpError() << "index element type must be i32 or i64, got "
                             << elem;
  return success();
}

/// Out-of-range indices are clamped into the dim, but an empty dim has no
/// element to clamp to: as in torch, any index into it is an error.
LogicalResult verifyIndexedDimNotEmpty(Operation *op, Value x, Value idx,
                                       int64_t dim) {
  ArrayRef<int64_t> idxShape = tensorType(idx).getShape();
  if (tensorType(x).getDimSize(dim) != 0 || llvm::is_contained(idxShape, 0))
    return success();
  return op->emitOpError() << "dim " << dim
                           << " of the operand is empty, so no index into it "
                              "is valid (index shape "
                           << shapeString(idxShape) << ")";
}

/// What gather and index_select share: types, index type, the dim.
template <typename OpT> LogicalResult verifyLookup(OpT op) {
  if (failed(verifyKilnElementTypes(op)) ||
      failed(verifyIndexTensor(op, op.getIdx())) ||
      failed(verifySameElementType(op, op.getX(), op.getResult(), "operand",
                                   "result")) ||
      failed(verifyDim(op, op.getDim(), op.getX().getType().getRank(), "dim")))
    return failure();
  return verifyIndexedDimNotEmpty(op, op.getX(), op.getIdx(), op.getDim());
}
} // namespace

LogicalResult GatherOp::verify() {
  if (failed(verifyLookup(*this)))
    return failure();
  int64_t rank = getX().getType().getRank();
  if (getIdx().getType().getRank() != rank)
    return emitOpError() << "index rank " << getIdx().getType().getRank()
                         << " differs from operand rank " << rank;
  // A `?` size is checked at run time.
  for (int64_t d = 0; d < rank; ++d)
    if (d != getDim() && !getIdx().getType().isDynamicDim(d) &&
        !getX().getType().isDynamicDim(d) &&
        getIdx().getType().getDimSize(d) > getX().getType().getDimSize(d))
      return emitOpError() << "index size " << getIdx().getType().getDimSize(d)
                           << " exceeds operand size "
                           << getX().getType().getDimSize(d) << " in dim "
                           << d;
  return verifyShapeIs(*this, getResult(), getIdx().getType().getShape(),
                       "result");
}

LogicalResult IndexSelectOp::verify() {
  if (failed(verifyLookup(*this)))
    return failure();
  if (getIdx().getType().getRank() != 1)
    return emitOpError() << "index must be 1-D, got rank "
                         << getIdx().getType().getRank();
  SmallVector<int64_t> want(getX().getType().getShape());
  want[getDim()] = getIdx().getType().getDimSize(0);
  return verifyShapeIs(*this, getResult(), want, "result");
}

LogicalResult ScatterAddOp::verify() {
  if (failed(verifyKilnElementTypes(*this)) ||
      failed(verifyIndexTensor(*this, getIdx())) ||
      failed(verifyElementKind(*this, getX(),
                               ElementKind::Float | ElementKind::Signed |
                                   ElementKind::Unsigned,
                               "operand")) ||
      failed(verifySameElementType(*this, getX(), getSrc(), "operand",
                                   "source")) ||
      failed(verifySameElementType(*this, getX(), getResult(), "operand",
                                   "result")))
    return failure();
  int64_t rank = getX().getType().getRank();
  if (failed(verifyDim(*this, getDim(), rank, "dim")))
    return failure();
  if (getIdx().getType().getRank() != rank || getSrc().getType().getRank() != rank)
    return emitOpError() << "index and source must have the operand's rank "
                         << rank;
  // A `?` size is checked at run time.
  auto exceeds = [](int64_t n, int64_t size) {
    return !ShapedType::isDynamic(n) && !ShapedType::isDynamic(size) && n > size;
  };
  for (int64_t d = 0; d < rank; ++d) {
    int64_t n = getIdx().getType().getDimSize(d);
    if (exceeds(n, getSrc().getType().getDimSize(d)) ||
        (d != getDim() && exceeds(n, getX().getType().getDimSize(d))))
      return emitOpError() << "index size " << n << " in dim " << d
                           << " exceeds the source or operand size";
  }
  if (failed(verifyIndexedDimNotEmpty(*this, getX(), getIdx(), getDim())))
    return failure();
  return verifyShapeIs(*this, getResult(), getX().getType().getShape(),
                       "result");
}

namespace {
template <typename OpT>
LogicalResult verifyReduce(OpT op, unsigned kinds, bool boolResult) {
  if (failed(verifyKilnElementTypes(op)) ||
      failed(verifyElementKind(op, op.getX(), kinds, "operand")))
    return failure();
  auto in = op.getX().getType();
  if (failed(verifyDimList(op, op.getDims(), in.getRank(), "dims")))
    return failure();
  Type want = boolResult ? IntegerType::get(op.getContext(), 1)
                         : in.getElementType();
  if (op.getType().getElementType() != want)
    return op.emitOpError() << "result element type "
                            << op.getType().getElementType() << " should be "
                            << want;
  return verifyShapeIs(op, op.getResult(),
                       reducedShape(in.getShape(), op.getDims(),
                                    op.getKeepDims()),
                       "result");
}
} // namespace

#define KILN_REDUCE_VERIFIER(OP, BOOL)                                         \
  LogicalResult OP::verify() { return verifyReduce(*this, kElementKinds, BOOL); }
KILN_REDUCE_VERIFIER(ReduceSumOp, false)
KILN_REDUCE_VERIFIER(ReduceProdOp, false)
KILN_REDUCE_VERIFIER(ReduceMeanOp, false)
KILN_REDUCE_VERIFIER(ReduceMaxOp, false)
KILN_REDUCE_VERIFIER(ReduceMinOp, false)
KILN_REDUCE_VERIFIER(ReduceAnyOp, true)
KILN_REDUCE_VERIFIER(ReduceAllOp, true)
#undef KILN_REDUCE_VERIFIER

namespace {
template <typename OpT> LogicalResult verifyArg(OpT op) {
  if (failed(verifyKilnElementTypes(op)) ||
      failed(verifyElementKind(op, op.getX(),
                               ElementKind::Float | ElementKind::Signed |
                                   ElementKind::Unsigned,
                               "operand")))
    return failure();
  auto in = op.getX().getType();
  if (failed(verifyDim(op, op.getDim(), in.getRank(), "dim")))
    return failure();
  if (!op.getType().getElementType().isSignlessInteger(64))
    return op.emitOpError() << "result element type must be i64";
  if (in.getRank() > 0 && in.getDimSize(op.getDim()) == 0)
    return op.emitOpError() << "cannot take the arg of an empty dim "
                            << op.getDim();
  return verifyShapeIs(op, op.getResult(),
                       reducedShape(in.getShape(), {static_cast<int64_t>(op.getDim())},
                                    op.getKeepDims()),
                       "result");
}

template <typename OpT> LogicalResult verifyRow(OpT op, unsigned kinds) {
  if (failed(verifyKilnElementTypes(op)) ||
      failed(verifyElementKind(op, op.getX(), kinds, "operand")))
    return failure();
  return verifyDim(op, op.getDim(), op.getX().getType().getRank(), "dim");
}
} // namespace

LogicalResult ArgmaxOp::verify() { return verifyArg(*this); }
LogicalResult ArgminOp::verify() { return verifyArg(*this); }
LogicalResult CumsumOp::verify() {
  return verifyRow(*this, ElementKind::Float | ElementKind::Signed |
                              ElementKind::Unsigned);
}
LogicalResult SoftmaxOp::verify() {
  return verifyRow(*this, ElementKind::Float);
}
LogicalResult LogSoftmaxOp::verify() {
  return verifyRow(*this, ElementKind::Float);
}

LogicalResult MatmulOp::verify() {
  // Two f8 formats may meet (E4M3 activations times E5M2 gradients, as
  // torch._scaled_mm takes them); other operands share one type.
  auto isFloat8 = [](Value v) {
    return elementKindOf(tensorType(v).getElementType()) == ElementKind::Float8;
  };
  if (failed(verifyKilnElementTypes(*this)) ||
      (!(isFloat8(getA()) && isFloat8(getB())) &&
       failed(verifySameElementType(*this, getA(), getB(), "a", "b"))) ||
      failed(verifyElementKind(*this, getA(),
                               ElementKind::Float | ElementKind::Float8 |
                                   ElementKind::Signed | ElementKind::Unsigned,
                               "operand")))
    return failure();
  auto a = getA().getType(), b = getB().getType();
  if (a.getRank() < 2 || b.getRank() < 2)
    return emitOpError() << "operands need rank >= 2, got " << a.getRank()
                         << " and " << b.getRank();
  int64_t k = a.getDimSize(a.getRank() - 1), kb = b.getDimSize(b.getRank() - 2);
  if (k != kb && !ShapedType::isDynamic(k) && !ShapedType::isDynamic(kb))
    return emitOpError() << "contraction sizes differ: a has " << k
                         << " columns, b has " << kb << " rows";
  auto batch = broadcastShapes({a.getShape().drop_back(2),
                                b.getShape().drop_back(2)});
  if (!batch)
    return emitOpError() << "batch dims " << shapeString(a.getShape().drop_back(2))
                         << " and " << shapeString(b.getShape().drop_back(2))
                         << " are not broadcast-compatible";
  batch->push_back(a.getDimSize(a.getRank() - 2));
  batch->push_back(b.getDimSize(b.getRank() - 1));
  Type in = a.getElementType(), out = getType().getElementType();
  bool widened = (isFloat(in) && isFloat(out) &&
                  out.getIntOrFloatBitWidth() >= in.getIntOrFloatBitWidth()) ||
                 (elementKindOf(in) == elementKindOf(out) && !isFloat(in) &&
                  out.getIntOrFloatBitWidth() >= in.getIntOrFloatBitWidth());
  if (!widened)
    return emitOpError() << "result element type " << out
                         << " must be the input type " << in
                         << " or a wider type of the same kind";
  return verifyShapeIs(*this, getResult(), *batch, "result");
}

namespace {
LogicalResult verifyNorm(Operation *op, Value x, ValueRange params,
                         Value result, double eps) {
  if (failed(verifyKilnElementTypes(op)) ||
      failed(verifyElementKind(op, x, ElementKind::Float, "operand")))
    return failure();
  auto type = tensorType(x);
  if (type.getRank() < 1)
    return op->emitOpError() << "operand needs rank >= 1";
  if (eps < 0)
    return op->emitOpError() << "attribute 'eps' must be non-negative";
  int64_t last = type.getDimSize(type.getRank() - 1);
  for (Value p : params)
    if (failed(verifySameElementType(op, x, p, "operand", "parameter")) ||
        failed(verifyShapeIs(op, p, {last}, "parameter")))
      return failure();
  if (result.getType() != x.getType())
    return op->emitOpError() << "result type " << result.getType()
                             << " should be " << x.getType();
  return success();
}
} // namespace

LogicalResult LayerNormOp::verify() {
  return verifyNorm(*this, getX(), {getWeight(), getBias()}, getResult(),
                    getEps().convertToDouble());
}

LogicalResult RmsNormOp::verify() {
  return verifyNorm(*this, getX(), {getWeight()}, getResult(),
                    getEps().convertToDouble());
}

//===----------------------------------------------------------------------===//
// quantize / dequantize
//===----------------------------------------------------------------------===//

namespace {
/// The scale rules shared by quantize and dequantize: `values` is the
/// float or int8 side, whose shape the scale's follows.
LogicalResult verifyQuantScale(Operation *op, RankedTensorType values,
                               RankedTensorType scale,
                               std::optional<uint64_t> blockSize) {
  // operand 1 is the scale of both ops
  Type scaleElem = scale.getElementType();
  if (!scaleElem.isF32() && !scaleElem.isF16() && !scaleElem.isBF16())
    return op->emitOpError() << "scale element type must be f32, f16 or bf16, got "
                             << scaleElem;
  if (!blockSize) {
    if (scale.getRank() != 0)
      return op->emitOpError() << "a per-tensor scale must be rank 0, got shape "
                               << shapeString(scale.getShape())
                               << " (set 'block_size' for per-block scales)";
    return success();
  }
  int64_t block = static_cast<int64_t>(*blockSize);
  if (block <= 0 || values.getRank() == 0)
    return op->emitOpError() << "'block_size' must be positive, on a tensor of rank >= 1";
  int64_t last = values.getShape().back();
  if (last % block != 0)
    return op->emitOpError() << "'block_size' " << block
                             << " does not divide the last dim (" << last << ")";
  SmallVector<int64_t> want(values.getShape());
  want.back() = last / block;
  return verifyShapeIs(op, op->getOperand(1), want, "scale");
}

bool isQuantFloat(Type t) { return t.isF32() || t.isF16() || t.isBF16(); }
} // namespace

LogicalResult QuantizeOp::verify() {
  Type in = getX().getType().getElementType();
  if (!isQuantFloat(in))
    return emitOpError() << "quantizes f32, f16 or bf16, got " << in;
  if (!getResult().getType().getElementType().isSignlessInteger(8))
    return emitOpError() << "result element type must be i8, got "
                         << getResult().getType().getElementType();
  if (failed(verifyShapeIs(*this, getResult(), getX().getType().getShape(), "result")))
    return failure();
  return verifyQuantScale(*this, getX().getType(), getScale().getType(), getBlockSize());
}

LogicalResult DequantizeOp::verify() {
  if (!getQ().getType().getElementType().isSignlessInteger(8))
    return emitOpError() << "dequantizes i8, got " << getQ().getType().getElementType();
  Type out = getResult().getType().getElementType();
  if (!isQuantFloat(out))
    return emitOpError() << "result element type must be f32, f16 or bf16, got " << out;
  if (failed(verifyShapeIs(*this, getResult(), getQ().getType().getShape(), "result")))
    return failure();
  return verifyQuantScale(*this, getQ().getType(), getScale().getType(), getBlockSize());
}

namespace {
/// Checks a spatial attribute: two entries (h, w), each at least `least`.
LogicalResult verifySpatial(Operation *op, ArrayRef<int64_t> values,
                            StringRef attr, int64_t least) {
  if (values.size() != 2)
    return op->emitOpError() << "attribute '" << attr
                             << "' needs 2 entries (h, w), got "
                             << values.size();
  for (int64_t v : values)
    if (v < least)
      return op->emitOpError()
             << "attribute '" << attr << "' = " << shapeString(values)
             << " must be " << (least ? "positive" : "non-negative");
  return success();
}

/// Checks the spatial output sizes of a sliding window over `input`
/// (h, w) and appends them to `shape`.
LogicalResult windowSizes(Operation *op, ArrayRef<int64_t> input,
                          ArrayRef<int64_t> kernel, ArrayRef<int64_t> stride,
                          ArrayRef<int64_t> padding,
                          ArrayRef<int64_t> dilation,
                          SmallVector<int64_t> &shape) {
  for (int d = 0; d < 2; ++d) {
    std::optional<int64_t> size = windowOutputSize(
        input[d], kernel[d], stride[d], padding[d], dilation[d]);
    if (!size)
      return op->emitOpError() << "output size of spatial dim " << d
                               << " overflows int64";
    if (*size < 1 && !ShapedType::isDynamic(*size))
      return op->emitOpError()
             << "output size of spatial dim " << d << " is " << *size
             << " (<= 0): input " << input[d] << " with padding "
             << padding[d] << " is smaller than the window "
             << dilation[d] * (kernel[d] - 1) + 1;
    shape.push_back(*size);
  }
  return success();
}

/// Checks that `x` padded by `padding` on both sides of its last two dims
/// (a buffer the kernels build) has a size that fits in int64.
LogicalResult verifyPaddedSize(Operation *op, RankedTensorType x,
                               ArrayRef<int64_t> padding) {
  SmallVector<int64_t> shape(x.getShape());
  for (int d = 0; d < 2; ++d) {
    int64_t &size = shape[shape.size() - 2 + d];
    if (!ShapedType::isDynamic(size))
      size += 2 * padding[d]; // windowSizes checked that this fits
  }
  return verifyTensorSize([&] { return op->emitOpError(); },
                          RankedTensorType::get(shape, x.getElementType()),
                          "padded input");
}

LogicalResult verifyResultType(Operation *op, Value result, Type element,
                               ArrayRef<int64_t> shape) {
  if (tensorType(result).getElementType() != element)
    return op->emitOpError() << "result element type "
                             << tensorType(result).getElementType()
                             << " should be " << element;
  return verifyShapeIs(op, result, shape, "result");
}
} // namespace

LogicalResult Conv2dOp::verify() {
  if (failed(verifyKilnElementTypes(*this)) ||
      failed(verifyElementKind(*this, getX(), ElementKind::Float, "x")) ||
      failed(verifySameElementType(*this, getX(), getW(), "x", "w")) ||
      (getBias() &&
       failed(verifySameElementType(*this, getX(), getBias(), "x", "bias"))))
    return failure();
  auto x = getX().getType(), w = getW().getType();
  if (x.getRank() != 4)
    return emitOpError() << "x must be NCHW (rank 4), got rank "
                         << x.getRank();
  if (w.getRank() != 4)
    return emitOpError() << "w must be OIHW (rank 4), got rank "
                         << w.getRank();
  if (failed(verifySpatial(*this, getStride(), "stride", 1)) ||
      failed(verifySpatial(*this, getPadding(), "padding", 0)) ||
      failed(verifySpatial(*this, getDilation(), "dilation", 1)))
    return failure();
  int64_t groups = getGroups(), channels = x.getDimSize(1),
          outChannels = w.getDimSize(0);
  if (groups < 1)
    return emitOpError() << "attribute 'groups' = " << groups
                         << " must be positive";
  // `?` channels are the weights' (checked at run time).
  bool dynamicChannels = ShapedType::isDynamic(channels);
  if (dynamicChannels && llvm::MulOverflow(w.getDimSize(1), groups, channels))
    return emitOpError() << "w's " << w.getDimSize(1) << " input channels times groups = "
                         << groups << " overflows int64";
  if (channels % groups)
    return emitOpError() << "groups = " << groups
                         << " does not divide the input channels "
                         << channels;
  if (outChannels % groups)
    return emitOpError() << "groups = " << groups
                         << " does not divide the output channels "
                         << outChannels << " (w dim 0)";
  if (w.getDimSize(1) != channels / groups)
    return emitOpError() << "w has " << w.getDimSize(1)
                         << " input channels per group (dim 1), expected "
                         << channels / groups << " (x's " << channels
                         << " channels / groups " << groups << ")";
  if (w.getDimSize(2) < 1 || w.getDimSize(3) < 1)
    return emitOpError() << "kernel size " << shapeString(w.getShape().drop_front(2))
                         << " must be positive";
  if (getBias() &&
      failed(verifyShapeIs(*this, getBias(), {outChannels}, "bias")))
    return failure();
  SmallVector<int64_t> shape = {x.getDimSize(0), outChannels};
  if (failed(windowSizes(*this, x.getShape().drop_front(2),
                         w.getShape().drop_front(2), getStride(), getPadding(),
                         getDilation(), shape)) ||
      failed(verifyPaddedSize(*this, x, getPadding())))
    return failure();
  return verifyResultType(*this, getResult(), x.getElementType(), shape);
}

namespace {
template <typename OpT> LogicalResult verifyPool(OpT op) {
  if (failed(verifyKilnElementTypes(op)) ||
      failed(verifyElementKind(op, op.getX(), ElementKind::Float, "operand")))
    return failure();
  auto x = op.getX().getType();
  if (x.getRank() != 3 && x.getRank() != 4)
    return op.emitOpError() << "x must be NCHW or CHW (rank 4 or 3), got rank "
                            << x.getRank();
  ArrayRef<int64_t> kernel = op.getKernel();
  ArrayRef<int64_t> stride = op.getStride().value_or(kernel);
  if (failed(verifySpatial(op, kernel, "kernel", 1)) ||
      failed(verifySpatial(op, stride, "stride", 1)) ||
      failed(verifySpatial(op, op.getPadding(), "padding", 0)))
    return failure();
  for (int d = 0; d < 2; ++d)
    if (op.getPadding()[d] > kernel[d] / 2)
      return op.emitOpError() << "padding " << op.getPadding()[d]
                              << " of spatial dim " << d
                              << " exceeds half the kernel (" << kernel[d]
                              << ")";
  SmallVector<int64_t> shape(x.getShape().drop_back(2));
  if (failed(windowSizes(op, x.getShape().take_back(2), kernel, stride,
                         op.getPadding(), {1, 1}, shape)) ||
      failed(verifyPaddedSize(op, x, op.getPadding())))
    return failure();
  return verifyResultType(op, op.getResult(), x.getElementType(), shape);
}
} // namespace

LogicalResult MaxPool2dOp::verify() { return verifyPool(*this); }
LogicalResult AvgPool2dOp::verify() { return verifyPool(*this); }

LogicalResult AttentionOp::verify() {
  if (failed(verifyKilnElementTypes(*this)) ||
      failed(verifyElementKind(*this, getQ(), ElementKind::Float, "q")) ||
      failed(verifySameElementType(*this, getQ(), getK(), "q", "k")) ||
      failed(verifySameElementType(*this, getQ(), getV(), "q", "v")))
    return failure();
  auto q = getQ().getType(), k = getK().getType(), v = getV().getType();
  int64_t rank = q.getRank();
  if (rank < 2)
    return emitOpError() << "q needs rank >= 2 ([batch..., seq, head_dim]), "
                            "got rank "
                         << rank;
  if (k.getRank() != rank || v.getRank() != rank)
    return emitOpError() << "q, k and v need one rank, got " << rank << ", "
                         << k.getRank() << " and " << v.getRank();
  ArrayRef<int64_t> batch = q.getShape().drop_back(2);
  if (k.getShape().drop_back(2) != batch || v.getShape().drop_back(2) != batch)
    return emitOpError() << "batch dims differ: q " << shapeString(batch)
                         << ", k " << shapeString(k.getShape().drop_back(2))
                         << ", v " << shapeString(v.getShape().drop_back(2));
  int64_t lq = q.getDimSize(rank - 2), lk = k.getDimSize(rank - 2);
  if (q.getDimSize(rank - 1) != k.getDimSize(rank - 1))
    return emitOpError() << "mismatched head dims: q has "
                         << q.getDimSize(rank - 1) << ", k has "
                         << k.getDimSize(rank - 1);
  if (v.getDimSize(rank - 2) != lk)
    return emitOpError() << "k and v have different sequence lengths: "
                         << lk << " and " << v.getDimSize(rank - 2);
  if (Value mask = getMask()) {
    auto m = cast<RankedTensorType>(mask.getType());
    if (m.getElementType() != q.getElementType() &&
        !m.getElementType().isInteger(1))
      return emitOpError() << "mask element type " << m.getElementType()
                           << " must be q's (" << q.getElementType()
                           << ", added) or i1 (true keeps)";
    SmallVector<int64_t> scores(batch);
    scores.append({lq, lk});
    // The mask may not stretch the scores; a `?` against a static size is
    // that size, checked at run time.
    auto shape = broadcastShapes({m.getShape(), scores});
    if (m.getRank() > rank || !shape || failed(verifyCompatibleShape(*shape, scores)))
      return emitOpError() << "mask " << shapeString(m.getShape())
                           << " does not broadcast to the scores "
                           << shapeString(scores);
  }
  if (std::optional<APFloat> scale = getScale();
      scale && !scale->isFinite())
    return emitOpError() << "attribute 'scale' must be finite";
  SmallVector<int64_t> shape(q.getShape().drop_back(1));
  shape.push_back(v.getDimSize(rank - 1));
  return verifyResultType(*this, getResult(), q.getElementType(), shape);
}
