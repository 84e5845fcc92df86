//===- InferResultType.cpp - an op's result type from its operands --------===//
#include "kiln/Dialect/InferResultType.h"
#include "kiln/Dialect/KilnOps.h"
#include "kiln/Dialect/TypedOps.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

#include <mutex>

using namespace mlir;

namespace kiln {
namespace {
template <typename... Ops> bool isOneOf(OperationName name) {
  return ((name.getTypeID() == TypeID::get<Ops>()) || ...);
}

RankedTensorType ranked(Type type) { return dyn_cast<RankedTensorType>(type); }

std::optional<int64_t> intAttr(DictionaryAttr attrs, StringRef name) {
  if (auto a = dyn_cast_or_null<IntegerAttr>(attrs.get(name)))
    return a.getInt();
  return std::nullopt;
}

/// The attribute `name`, `otherwise` where it is absent or malformed (the
/// verifier reports the latter; a spatial attribute takes two entries).
ArrayRef<int64_t> arrayAttr(DictionaryAttr attrs, StringRef name,
                            ArrayRef<int64_t> otherwise = {}) {
  if (auto a = dyn_cast_or_null<DenseI64ArrayAttr>(attrs.get(name)))
    return a.asArrayRef();
  return otherwise;
}

bool boolAttr(DictionaryAttr attrs, StringRef name) {
  auto a = dyn_cast_or_null<BoolAttr>(attrs.get(name));
  return a && a.getValue();
}

bool inRange(int64_t dim, size_t rank) { return dim >= 0 && dim < static_cast<int64_t>(rank); }

/// Whether sliding-window attributes can be applied: two entries each,
/// positive sizes, non-negative padding.
bool validWindow(ArrayRef<int64_t> kernel, ArrayRef<int64_t> stride,
                 ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation) {
  auto all = [](ArrayRef<int64_t> values, int64_t least) {
    return values.size() == 2 && llvm::all_of(values, [&](int64_t v) { return v >= least; });
  };
  return all(kernel, 1) && all(stride, 1) && all(padding, 0) && all(dilation, 1);
}

/// The shape rule of an op whose operands are well-formed enough to apply
/// it; nullopt where they are not (the verifier says why).
std::optional<SmallVector<int64_t>> inferShape(OperationName name,
                                               ArrayRef<RankedTensorType> in,
                                               DictionaryAttr attrs) {
  ArrayRef<int64_t> x = in.front().getShape();
  if (name.hasTrait<OpTrait::BroadcastBinary>() || isOneOf<SelectOp>(name)) {
    SmallVector<ArrayRef<int64_t>> shapes;
    for (RankedTensorType t : in)
      shapes.push_back(t.getShape());
    return broadcastShapes(shapes);
  }
  if (isOneOf<TransposeOp>(name)) {
    SmallVector<int64_t> shape;
    for (int64_t p : arrayAttr(attrs, "perm")) {
      if (!inRange(p, x.size()))
        return std::nullopt;
      shape.push_back(x[p]);
    }
    return shape;
  }
  if (isOneOf<SliceOp>(name)) {
    ArrayRef<int64_t> start = arrayAttr(attrs, "start"), stop = arrayAttr(attrs, "stop"),
                      step = arrayAttr(attrs, "step");
    if (start.size() != x.size() || stop.size() != x.size() ||
        (!step.empty() && step.size() != x.size()))
      return std::nullopt;
    SmallVector<int64_t> shape;
    for (size_t d = 0; d < x.size(); ++d) {
      int64_t s = step.empty() ? 1 : step[d], span = stop[d] - start[d];
      if (s <= 0 || span < 0)
        return std::nullopt;
      shape.push_back(span / s + (span % s != 0));
    }
    return shape;
  }
  if (isOneOf<PadOp>(name)) {
    ArrayRef<int64_t> low = arrayAttr(attrs, "low"), high = arrayAttr(attrs, "high");
    if (low.size() != x.size() || high.size() != x.size())
      return std::nullopt;
    SmallVector<int64_t> shape;
    for (size_t d = 0; d < x.size(); ++d) {
      int64_t padded;
      if (llvm::AddOverflow(x[d], low[d], padded) || llvm::AddOverflow(padded, high[d], padded))
        return std::nullopt;
      shape.push_back(padded);
    }
    return shape;
  }
  if (isOneOf<ConcatOp>(name)) {
    std::optional<int64_t> dim = intAttr(attrs, "dim");
    if (!dim || !inRange(*dim, x.size()))
      return std::nullopt;
    // Along `dim` a sum (`?` if a term is); off it, a static size wins over
    // a `?` (the verifier's rule).
    SmallVector<int64_t> shape(x);
    shape[*dim] = 0;
    for (RankedTensorType t : in) {
      if (t.getRank() != static_cast<int64_t>(x.size()))
        return std::nullopt;
      for (auto [d, size] : llvm::enumerate(t.getShape())) {
        int64_t &r = shape[d];
        if (static_cast<int64_t>(d) != *dim) {
          if (ShapedType::isDynamic(r))
            r = size;
        } else if (ShapedType::isDynamic(size) || ShapedType::isDynamic(r)) {
          r = ShapedType::kDynamic;
        } else if (llvm::AddOverflow(r, size, r)) {
          return std::nullopt;
        }
      }
    }
    return shape;
  }
  if (isOneOf<GatherOp>(name))
    return SmallVector<int64_t>(in[1].getShape());
  if (isOneOf<IndexSelectOp>(name)) {
    std::optional<int64_t> dim = intAttr(attrs, "dim");
    if (!dim || !inRange(*dim, x.size()) || in[1].getRank() != 1)
      return std::nullopt;
    SmallVector<int64_t> shape(x);
    shape[*dim] = in[1].getDimSize(0);
    return shape;
  }
  if (isOneOf<ReduceSumOp, ReduceProdOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp,
              ReduceAnyOp, ReduceAllOp>(name)) {
    ArrayRef<int64_t> dims = arrayAttr(attrs, "dims");
    if (!llvm::all_of(dims, [&](int64_t d) { return inRange(d, x.size()); }))
      return std::nullopt;
    return reducedShape(x, dims, boolAttr(attrs, "keep_dims"));
  }
  if (isOneOf<ArgmaxOp, ArgminOp>(name)) {
    std::optional<int64_t> dim = intAttr(attrs, "dim");
    if (!dim || !inRange(*dim, x.size()))
      return std::nullopt;
    return reducedShape(x, {*dim}, boolAttr(attrs, "keep_dims"));
  }
  if (isOneOf<MatmulOp>(name)) {
    if (x.size() < 2 || in[1].getRank() < 2)
      return std::nullopt;
    ArrayRef<int64_t> y = in[1].getShape();
    auto shape = broadcastShapes({x.drop_back(2), y.drop_back(2)});
    if (!shape)
      return std::nullopt;
    shape->push_back(x[x.size() - 2]);
    shape->push_back(y.back());
    return shape;
  }
  if (isOneOf<Conv2dOp>(name)) {
    ArrayRef<int64_t> w = in[1].getShape();
    if (x.size() != 4 || w.size() != 4)
      return std::nullopt;
    ArrayRef<int64_t> stride = arrayAttr(attrs, "stride", {1, 1}),
                      padding = arrayAttr(attrs, "padding", {0, 0}),
                      dilation = arrayAttr(attrs, "dilation", {1, 1});
    if (!validWindow(w.drop_front(2), stride, padding, dilation))
      return std::nullopt;
    SmallVector<int64_t> shape = {x[0], w[0]};
    for (int d = 0; d < 2; ++d) {
      std::optional<int64_t> size =
          windowOutputSize(x[2 + d], w[2 + d], stride[d], padding[d], dilation[d]);
      if (!size)
        return std::nullopt;
      shape.push_back(*size);
    }
    return shape;
  }
  if (isOneOf<MaxPool2dOp, AvgPool2dOp>(name)) {
    ArrayRef<int64_t> kernel = arrayAttr(attrs, "kernel"),
                      stride = arrayAttr(attrs, "stride", kernel),
                      padding = arrayAttr(attrs, "padding", {0, 0});
    if (x.size() < 2 || !validWindow(kernel, stride, padding, {1, 1}))
      return std::nullopt;
    SmallVector<int64_t> shape(x.drop_back(2));
    for (int d = 0; d < 2; ++d) {
      std::optional<int64_t> size =
          windowOutputSize(x[x.size() - 2 + d], kernel[d], stride[d], padding[d]);
      if (!size)
        return std::nullopt;
      shape.push_back(*size);
    }
    return shape;
  }
  if (isOneOf<AttentionOp>(name)) {
    ArrayRef<int64_t> v = in[2].getShape();
    if (x.size() < 2 || v.size() != x.size())
      return std::nullopt;
    SmallVector<int64_t> shape(x.drop_back(1));
    shape.push_back(v.back());
    return shape;
  }
  // Elementwise, row ops, norms, scatter_add, flip, isnan, cast and the
  // quantization pair keep the first operand's shape.
  return SmallVector<int64_t>(x);
}

/// The result element type, given the operands' (`in` non-empty).
Type inferElement(OperationName name, ArrayRef<RankedTensorType> in) {
  MLIRContext *context = name.getContext();
  if (isOneOf<EqOp, NeOp, LtOp, LeOp, GtOp, GeOp, IsnanOp, ReduceAnyOp, ReduceAllOp>(name))
    return IntegerType::get(context, 1);
  if (isOneOf<ArgmaxOp, ArgminOp>(name))
    return IntegerType::get(context, 64);
  if (isOneOf<QuantizeOp>(name))
    return IntegerType::get(context, 8);
  if (isOneOf<DequantizeOp>(name))
    return Float32Type::get(context);
  if (isOneOf<SelectOp>(name))
    return in[1].getElementType();
  return in.front().getElementType();
}
} // namespace

SmallVector<int64_t> reducedShape(ArrayRef<int64_t> shape, ArrayRef<int64_t> dims,
                                  bool keepDims) {
  SmallVector<int64_t> out;
  for (auto [d, size] : llvm::enumerate(shape)) {
    bool reduced = llvm::is_contained(dims, static_cast<int64_t>(d));
    if (!reduced)
      out.push_back(size);
    else if (keepDims)
      out.push_back(1);
  }
  return out;
}

std::optional<int64_t> windowOutputSize(int64_t input, int64_t kernel, int64_t stride,
                                        int64_t padding, int64_t dilation) {
  // The window's own sizes fit whatever the input (a run computes with
  // them: SizeWindow), and so does the padded input where it is static.
  int64_t padded, span, spanPlusOne;
  if (llvm::MulOverflow(padding, int64_t(2), padded) ||
      llvm::MulOverflow(dilation, kernel - 1, span) ||
      llvm::AddOverflow(span, int64_t(1), spanPlusOne))
    return std::nullopt;
  if (ShapedType::isDynamic(input))
    return ShapedType::kDynamic;
  if (llvm::AddOverflow(padded, input, padded))
    return std::nullopt;
  // Floor division: a window that does not fit gives a size < 1.
  int64_t room = padded - span - 1;
  return (room >= 0 ? room / stride : -1) + 1;
}

std::optional<ResultRule> resultRule(OperationName name) {
  if (name.getDialectNamespace() != KilnDialect::getDialectNamespace() ||
      !name.isRegistered())
    return std::nullopt;
  if (isOneOf<FillOp, IotaOp, RandomUniformOp, RandomNormalOp, ReshapeOp, BroadcastOp>(name))
    return ResultRule::Given;
  if (isOneOf<CastOp>(name))
    return ResultRule::ElementRequired;
  if (isOneOf<MatmulOp, DequantizeOp>(name))
    return ResultRule::ElementOptional;
  return ResultRule::Inferred;
}

std::optional<RankedTensorType> inferResultType(OperationName name, TypeRange operands,
                                                DictionaryAttr attrs) {
  std::optional<ResultRule> rule = resultRule(name);
  if (!rule || *rule == ResultRule::Given)
    return std::nullopt;
  SmallVector<RankedTensorType> in;
  for (Type t : operands)
    if (RankedTensorType r = ranked(t))
      in.push_back(r);
  // A malformed op: an operand missing or unranked. The placeholder lets
  // the verifier report it.
  if (in.empty() || in.size() != operands.size())
    return RankedTensorType::get({}, Float32Type::get(name.getContext()));
  if ((isOneOf<GatherOp, MatmulOp, QuantizeOp, DequantizeOp, Conv2dOp>(name) &&
       in.size() < 2) ||
      (isOneOf<SelectOp, AttentionOp>(name) && in.size() < 3))
    return in.front();
  if (!attrs)
    attrs = DictionaryAttr::get(name.getContext());
  // Where no shape follows, the placeholder keeps the element type that
  // does, so the verifier names the shapes (select's condition gave its i1,
  // and the verifier a dtype mismatch).
  std::optional<SmallVector<int64_t>> shape = inferShape(name, in, attrs);
  if (!shape)
    return RankedTensorType::get(in.front().getShape(), inferElement(name, in));
  return RankedTensorType::get(*shape, inferElement(name, in));
}

namespace {
/// The context typed ops are built in (used until the process ends).
MLIRContext &typedOpContext() {
  static auto *context = [] {
    mlir::DialectRegistry registry;
    registerKilnDialect(registry);
    auto *c = new MLIRContext(registry, MLIRContext::Threading::DISABLED);
    c->loadAllAvailableDialects();
    return c;
  }();
  return *context;
}
std::mutex typedOpMutex;
} // namespace

std::vector<std::string> dialectOpNames() {
  std::lock_guard lock(typedOpMutex);
  std::vector<std::string> names;
  for (RegisteredOperationName name : typedOpContext().getRegisteredOperations())
    if (name.getDialectNamespace() == KilnDialect::getDialectNamespace())
      names.push_back(name.getStringRef().str());
  return names;
}

std::expected<TensorSpelling, std::string>
checkTypedOp(std::string_view op, const std::vector<TensorSpelling> &operands,
             std::string_view attrs, std::optional<std::string_view> element) {
  std::lock_guard lock(typedOpMutex);
  MLIRContext *context = &typedOpContext();
  std::string diagnostics;
  ScopedDiagnosticHandler handler(context, [&](Diagnostic &diag) {
    diagnostics += (diagnostics.empty() ? "" : "; ") + diag.str();
    return success();
  });
  auto refuse = [](std::string message) { return std::unexpected(std::move(message)); };

  std::optional<RegisteredOperationName> name = RegisteredOperationName::lookup(op, context);
  std::optional<ResultRule> rule = name ? resultRule(*name) : std::nullopt;
  if (!rule)
    return refuse("no such op in the kiln dialect");
  if (*rule == ResultRule::Given)
    return refuse("its result type is the caller's to give");
  if (*rule == ResultRule::ElementRequired && !element)
    return refuse("needs the result's element type");
  if (*rule == ResultRule::Inferred && element)
    return refuse("the result's element type is not a choice");
  std::string dictionary = "{";
  dictionary.append(attrs).append("}");
  auto dict = dyn_cast_or_null<DictionaryAttr>(parseAttribute(dictionary, context));
  if (!dict)
    return refuse("bad attributes " + dictionary + ": " + diagnostics);
  auto typeOf = [&](std::string_view spelled, ArrayRef<int64_t> shape) -> RankedTensorType {
    Type elementType = parseType(spelled, context);
    return elementType ? RankedTensorType::get(shape, elementType) : RankedTensorType();
  };
  SmallVector<Type> types;
  for (const TensorSpelling &t : operands) {
    RankedTensorType type = typeOf(t.element, t.shape);
    if (!type)
      return refuse("no element type '" + t.element + "'");
    types.push_back(type);
  }
  RankedTensorType result = *inferResultType(*name, types, dict);
  if (element && !(result = typeOf(*element, result.getShape())))
    return refuse("no element type '" + std::string(*element) + "'");

  // The op itself, on the arguments of a block of its own, for the verifier.
  Location loc = UnknownLoc::get(context);
  Block block;
  for (Type t : types)
    block.addArgument(t, loc);
  OperationState state(loc, *name);
  state.addOperands(block.getArguments());
  state.addAttributes(dict.getValue());
  state.addTypes(result);
  Operation *built = Operation::create(state);
  bool verified = succeeded(verify(built));
  built->destroy();
  if (!verified)
    return refuse(diagnostics);
  TensorSpelling spelled{"", {result.getShape().begin(), result.getShape().end()}};
  llvm::raw_string_ostream(spelled.element) << result.getElementType();
  return spelled;
}

} // namespace kiln
