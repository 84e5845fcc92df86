//===- DynamicShapes.cpp - the slice of ops with `?` dims; shape classes --===//
//
// A program's run-time sizes are symbols, one per `?` dim of the entry's
// arguments. Walking the entry function, each op ties the sizes of its
// operands and results together (broadcasting operands must agree, a matmul's
// K dims must agree, ...); a union-find keeps which symbols are one size and
// which are tied to a static size. What comes out is the shape class: the
// signature the runtime checks inputs against and computes outputs from.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/KilnToLinalg/DynamicShapes.h"
#include "kiln/Dialect/KilnOps.h"
#include "kiln/Lowering/KilnToLinalg/ScalarOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>

using namespace mlir;

namespace kiln {

namespace {
/// Where a `?` dim of a result that no operand sizes takes its run-time
/// size from: a static size (`size` >= 0) or an entry argument's dim.
struct SizeSource {
  int64_t size;
  unsigned argument, dim;
};

/// Whether `op` makes a tensor whose sizes no operand gives.
bool isSizeless(Operation *op) {
  return isa<FillOp, IotaOp, RandomUniformOp, RandomNormalOp>(op);
}

bool hasDynamicDims(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && !tensor.hasStaticShape();
}

/// reshape keeps its one `?` dim: the static dims around it hold as many
/// elements on both sides, so the run-time size passes through unchanged.
bool isSimpleDynamicReshape(ReshapeOp op) {
  auto staticPart = [](RankedTensorType t, int &dynamicDims) {
    int64_t count = 1;
    for (int64_t d : t.getShape())
      ShapedType::isDynamic(d) ? void(++dynamicDims) : void(count *= d);
    return count;
  };
  int inDynamic = 0, outDynamic = 0;
  int64_t in = staticPart(op.getX().getType(), inDynamic);
  int64_t out = staticPart(op.getType(), outDynamic);
  return inDynamic == 1 && outDynamic == 1 && in == out && in != 0;
}

/// Equal-size classes of run-time sizes. A term is a size (>= 0) or a
/// symbol (dynamicDim(s)); find() gives a class's size where it is tied to
/// one, else its representative symbol. A class may be a sum of terms (a
/// padded or concatenated dim): tying it to a size or to another sum leaves
/// an Equal rule for the run to check.
class SizeClasses {
public:
  struct Rule {
    SizeRule::Kind kind;
    int64_t dim;
    SmallVector<int64_t> terms;
    std::string origin;
    std::string tiedBy = {}; // the op that last tied a sum's class to another
    std::optional<SizeWindow> window = std::nullopt;

    /// The value of the terms (through the window), where all are sizes;
    /// nullopt where one is not, `error` set where the sum overflows or the
    /// window does not fit.
    std::optional<int64_t> value(SizeClasses &classes, bool &error) const {
      int64_t total = 0;
      error = false;
      for (int64_t t : terms)
        if ((t = classes.find(t)) < 0)
          return std::nullopt;
        else if (llvm::AddOverflow(total, t, total))
          return error = true, std::nullopt;
      std::optional<int64_t> count = window ? window->count(total) : total;
      error = !count;
      return count;
    }
  };

  int64_t fresh() {
    parent.push_back(parent.size());
    size.push_back(ShapedType::kDynamic);
    return dynamicDim(static_cast<int64_t>(parent.size() - 1));
  }
  int64_t find(int64_t term) {
    if (term >= 0)
      return term;
    int64_t root = rootOf(sizeSymbolOf(term));
    return ShapedType::isDynamic(size[root]) ? dynamicDim(root) : size[root];
  }
  /// The sum of `terms`: a size where all are sizes, the one symbol where
  /// the rest add 0, else a new class defined as the sum; nullopt where the
  /// sizes overflow int64.
  std::optional<int64_t> sum(ArrayRef<int64_t> terms, const std::string &origin) {
    int64_t constant = 0;
    SmallVector<int64_t> symbols;
    for (int64_t t : terms) {
      if ((t = find(t)) < 0)
        symbols.push_back(t);
      else if (llvm::AddOverflow(constant, t, constant))
        return std::nullopt;
    }
    if (symbols.empty())
      return constant;
    if (symbols.size() == 1 && constant == 0)
      return symbols.front();
    if (constant != 0)
      symbols.push_back(constant);
    int64_t s = fresh();
    sums[sizeSymbolOf(s)] = Rule{SizeRule::Kind::Sum, s, symbols, origin};
    return s;
  }
  /// The places `window` takes along `term`: a size where `term` is one,
  /// else a new class the window defines; nullopt where the window does
  /// not fit a size.
  std::optional<int64_t> slide(int64_t term, SizeWindow window, const std::string &origin) {
    if ((term = find(term)) >= 0)
      return window.count(term);
    int64_t s = fresh();
    sums[sizeSymbolOf(s)] = Rule{SizeRule::Kind::Sum, s, {term}, origin, {}, window};
    return s;
  }
  /// Ties `a` and `b` together; false where they are two different sizes.
  bool unify(int64_t a, int64_t b, const std::string &origin) {
    a = find(a);
    b = find(b);
    if (a == b)
      return true;
    if (a >= 0 && b >= 0)
      return false;
    if (a >= 0)
      std::swap(a, b);
    // The class whose rule reads the other through a window is the one
    // that keeps its rule as a check (below).
    if (b < 0)
      if (auto it = sums.find(sizeSymbolOf(b)); it != sums.end() && windowReaches(it->second, a))
        std::swap(a, b);
    int64_t root = sizeSymbolOf(a);
    std::optional<Rule> sumOfA;
    if (auto it = sums.find(root); it != sums.end()) {
      sumOfA = std::move(it->second);
      sums.erase(it);
    }
    // A window's count may equal the size it slides along (a same-size
    // conv added to its input, a residual block of two): that stays a
    // check, never a definition that reads itself.
    bool windowOverB = sumOfA && b < 0 && windowReaches(*sumOfA, b);
    if (b >= 0) {
      size[root] = b;
    } else {
      parent[root] = sizeSymbolOf(b);
      if (sumOfA && !sums.count(sizeSymbolOf(b)) && !windowOverB) {
        sums[sizeSymbolOf(b)] = std::move(*sumOfA);
        sumOfA.reset();
      }
      if (auto it = sums.find(sizeSymbolOf(b)); it != sums.end())
        it->second.tiedBy = origin;
    }
    if (sumOfA)
      checks.push_back(
          {SizeRule::Kind::Equal, b, std::move(sumOfA->terms), origin, {}, sumOfA->window});
    return true;
  }
  /// Whether `rule`'s terms reach class `cls` (directly or through the
  /// sums defining them) with a window on the way.
  bool windowReaches(const Rule &rule, int64_t cls) {
    llvm::DenseSet<std::pair<int64_t, int>> seen; // a class, and whether a window led there
    std::function<bool(const Rule &, bool)> reaches = [&](const Rule &r, bool windowed) {
      windowed |= r.window.has_value();
      for (int64_t t : r.terms) {
        if ((t = find(t)) >= 0 || !seen.insert({t, windowed ? 1 : 0}).second)
          continue;
        if (t == cls) {
          if (windowed)
            return true;
          continue;
        }
        if (auto it = sums.find(sizeSymbolOf(t)); it != sums.end() && reaches(it->second, windowed))
          return true;
      }
      return false;
    };
    return reaches(rule, false);
  }
  /// `dim` must be at least `term` at run time.
  void atLeast(int64_t dim, int64_t term, const std::string &origin) {
    checks.push_back({SizeRule::Kind::AtLeast, dim, {term}, origin});
  }

  /// Classes a run computes (their root -> the sum) and what it checks.
  llvm::DenseMap<int64_t, Rule> sums;
  std::vector<Rule> checks;

private:
  int64_t rootOf(int64_t s) {
    while (parent[s] != s)
      s = parent[s] = parent[parent[s]];
    return s;
  }
  SmallVector<int64_t> parent, size;
};

std::string where(Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  if (auto file = op->getLoc()->findInstanceOf<FileLineColLoc>())
    os << file.getFilename().getValue() << ":" << file.getLine() << ":"
       << file.getColumn() << ": ";
  return s;
}

/// "program:3:8: 'kiln.pad'": the op, for errors.
std::string origin(Operation *op) {
  return where(op) + "'" + op->getName().getStringRef().str() + "'";
}

class ShapeClassBuilder {
public:
  Expected<void> run(func::FuncOp entry, std::vector<TensorSignature> &inputs,
                     std::vector<TensorSignature> &outputs, std::vector<SizeRule> &rules) {
    for (BlockArgument arg : entry.getArguments()) {
      SmallVector<int64_t> dims;
      for (int64_t d : cast<RankedTensorType>(arg.getType()).getShape())
        dims.push_back(ShapedType::isDynamic(d) ? classes.fresh() : d);
      terms[arg] = dims;
    }
    for (Operation &op : entry.getBody().front()) {
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        for (auto [signature, value] : llvm::zip(outputs, ret.getOperands())) {
          const SmallVector<int64_t> &t = of(value);
          signature.shape.assign(t.begin(), t.end());
        }
        continue;
      }
      if (auto failed = visit(&op); !failed)
        return failed;
    }
    if (auto ok = settleSums(); !ok)
      return ok;
    if (auto ok = findSizeSources(entry); !ok)
      return ok;
    // Symbols are numbered as the inputs first use them, then the sums.
    for (auto [signature, arg] : llvm::zip(inputs, entry.getArguments())) {
      signature.shape.assign(terms[arg].begin(), terms[arg].end());
      for (int64_t &d : signature.shape)
        if ((d = classes.find(d)) < 0)
          d = dynamicDim(numbers.try_emplace(d, numbers.size()).first->second);
    }
    // Sums in the order a run computes them: each after the sums it reads.
    SmallVector<int64_t> order;
    DenseMap<int64_t, int> state; // 1: being ordered, 2: ordered
    std::function<bool(int64_t)> visitSum = [&](int64_t root) {
      if (int st = state.lookup(root))
        return st == 2;
      state[root] = 1;
      for (int64_t t : classes.sums.find(root)->second.terms)
        if ((t = classes.find(t)) < 0 && classes.sums.count(sizeSymbolOf(t)) &&
            !visitSum(sizeSymbolOf(t)))
          return false;
      state[root] = 2;
      order.push_back(root);
      return true;
    };
    for (auto &sum : classes.sums)
      if (!visitSum(sum.first))
        return makeError(ErrorKind::Unsupported,
                         sum.second.origin + " makes a run-time size a sum that includes itself" +
                             (sum.second.tiedBy.empty()
                                  ? std::string()
                                  : " once " + sum.second.tiedBy +
                                        " ties it to one of its terms"));
    auto number = [&](int64_t term) -> std::optional<int64_t> {
      if ((term = classes.find(term)) >= 0)
        return term;
      if (auto it = numbers.find(term); it != numbers.end())
        return dynamicDim(it->second);
      if (!classes.sums.count(sizeSymbolOf(term)))
        return std::nullopt; // no input gives it
      return dynamicDim(numbers.try_emplace(term, numbers.size()).first->second);
    };
    auto rule = [&](const SizeClasses::Rule &r) -> std::optional<SizeRule> {
      SizeRule out{r.kind, *number(r.dim), {}, r.origin, r.window};
      for (int64_t t : r.terms) {
        auto n = number(t);
        if (!n)
          return std::nullopt;
        out.terms.push_back(*n);
      }
      return out;
    };
    for (int64_t root : order) {
      const SizeClasses::Rule &sum = classes.sums.find(root)->second;
      auto r = rule(sum);
      if (!r)
        return makeError(ErrorKind::Unsupported,
                         sum.origin + " needs a size that no input gives");
      rules.push_back(std::move(*r));
    }
    for (const SizeClasses::Rule &check : classes.checks) {
      std::optional<int64_t> dim = number(check.dim);
      std::optional<SizeRule> r = dim ? rule(check) : std::nullopt;
      if (!r)
        return makeError(ErrorKind::Unsupported,
                         check.origin + " needs a size that no input gives");
      bool error;
      std::optional<int64_t> total = check.value(classes, error);
      if (error)
        return cannotFit(check);
      if (*dim < 0 || !total) {
        rules.push_back(std::move(*r));
        continue;
      }
      bool holds = check.kind == SizeRule::Kind::AtLeast ? *dim >= *total : *dim == *total;
      if (!holds)
        return makeError(ErrorKind::InvalidArgument,
                         check.origin + " needs a dim of size " + std::to_string(*dim) +
                             (check.kind == SizeRule::Kind::AtLeast ? " to be at least "
                                                                    : " to be ") +
                             std::to_string(*total) + ": its operands can never fit");
    }
    for (TensorSignature &signature : outputs)
      for (int64_t &d : signature.shape) {
        std::optional<int64_t> n = number(d);
        if (!n)
          return makeError(ErrorKind::Unsupported,
                           "a result of @" + entry.getSymName().str() + " is " +
                               signature.describe() +
                               ", and no input gives the size of its `?` dim");
        d = *n;
      }
    return {};
  }

  /// Where the `?` dims of sizeless ops' results take their sizes.
  llvm::DenseMap<Operation *, SmallVector<SizeSource>> sources;
  /// The sizeless ops with `?` dims, in order.
  SmallVector<Operation *> sizeless;

private:
  /// Each `?` dim of a sizeless op's result: a static size its class is
  /// tied to, or an argument's dim in its class (not a sum: kernels read
  /// sizes from their arguments).
  Expected<void> findSizeSources(func::FuncOp entry) {
    for (Operation *op : sizeless) {
      SmallVector<SizeSource> &list = sources[op];
      auto type = cast<RankedTensorType>(op->getResult(0).getType());
      for (auto [d, term] : llvm::enumerate(of(op->getResult(0)))) {
        if (!type.isDynamicDim(d))
          continue;
        int64_t size = classes.find(term);
        if (size >= 0) {
          list.push_back({size, 0, 0});
          continue;
        }
        std::optional<SizeSource> found;
        for (BlockArgument arg : entry.getArguments())
          for (auto [ad, argTerm] : llvm::enumerate(of(arg)))
            if (!found && classes.find(argTerm) == size)
              found = SizeSource{-1, arg.getArgNumber(), static_cast<unsigned>(ad)};
        if (!found)
          return makeError(ErrorKind::Unsupported,
                           origin(op) + " makes a " + describe(type) + " whose dim " +
                               std::to_string(d) +
                               " no input gives the size of: an op that needs it equal "
                               "to an input's dim ties it");
        list.push_back(*found);
      }
    }
    return {};
  }

  static std::string describe(Type type) {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << type;
    return s;
  }

  /// `v`'s terms; a value no op gave terms to (a call's result) has its
  /// type's sizes.
  SmallVector<int64_t> &of(Value v) {
    auto [it, fresh] = terms.try_emplace(v);
    if (fresh)
      for (int64_t d : cast<RankedTensorType>(v.getType()).getShape())
        it->second.push_back(ShapedType::isDynamic(d) ? classes.fresh() : d);
    return it->second;
  }

  Expected<void> tie(Operation *op, int64_t a, int64_t b) {
    if (classes.unify(a, b, origin(op)))
      return {};
    return makeError(ErrorKind::InvalidArgument,
                     origin(op) + " needs a dim of size " + std::to_string(classes.find(a)) +
                         " to be " + std::to_string(classes.find(b)) +
                         ": the sizes of its operands can never agree");
  }

  std::unexpected<Error> overflows(Operation *op) {
    return makeError(ErrorKind::InvalidArgument, origin(op) + " makes a size that overflows int64");
  }

  /// A rule whose sizes became known and do not fit: a sum that
  /// overflows, or a window larger than its padded dim.
  static std::unexpected<Error> cannotFit(const SizeClasses::Rule &rule) {
    if (!rule.window)
      return makeError(ErrorKind::InvalidArgument,
                       rule.origin + " makes a size that overflows int64");
    return makeError(ErrorKind::InvalidArgument,
                     rule.origin + " slides a window of " + std::to_string(rule.window->span) +
                         " over a dim its operands make too short (padded by " +
                         std::to_string(rule.window->padding / 2) + " on each side)");
  }

  /// NumPy broadcasting over `shapes` (the types) and their `terms`: a
  /// static 1 stretches, every other dim of a column is one size.
  Expected<SmallVector<int64_t>> broadcast(Operation *op, ArrayRef<Value> values) {
    size_t rank = 0;
    for (Value v : values)
      rank = std::max<size_t>(rank, of(v).size());
    SmallVector<int64_t> result(rank, 1);
    SmallVector<bool> seen(rank, false);
    for (Value v : values) {
      ArrayRef<int64_t> shape = cast<RankedTensorType>(v.getType()).getShape();
      SmallVector<int64_t> t = of(v);
      for (size_t i = 0; i < t.size(); ++i) {
        size_t r = rank - t.size() + i;
        if (shape[i] == 1)
          continue;
        if (seen[r]) {
          if (auto ok = tie(op, result[r], t[i]); !ok)
            return std::unexpected(ok.error());
        } else {
          result[r] = t[i];
          seen[r] = true;
        }
      }
    }
    return result;
  }

  Expected<void> visit(Operation *op) {
    bool dynamic = llvm::any_of(op->getOperandTypes(), hasDynamicDims) ||
                   llvm::any_of(op->getResultTypes(), hasDynamicDims);
    if (dynamic && !lowersWithDynamicDims(op)) {
      std::string type;
      llvm::raw_string_ostream os(type);
      for (Type t : llvm::concat<const Type>(op->getOperandTypes(), op->getResultTypes()))
        if (hasDynamicDims(t)) {
          os << t;
          break;
        }
      if (isa<ArgmaxOp, ArgminOp, GatherOp, IndexSelectOp, ScatterAddOp>(op))
        return makeError(ErrorKind::Unsupported,
                         origin(op) + " over a `?` dim (" + type +
                             ") is not supported: at run time it could be empty, "
                             "which has no arg or element to read or write; its "
                             "other dims may be `?`");
      return makeError(ErrorKind::Unsupported,
                       origin(op) + " with dynamic dims (" + type +
                           ") is not supported yet; docs/dynamic-shapes.md lists the "
                           "ops that take `?` dims");
    }
    SmallVector<int64_t> result;
    if (!dynamic) {
      if (op->getNumResults() == 1)
        if (auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType()))
          result.assign(type.getShape().begin(), type.getShape().end());
    } else if (auto r = resultTerms(op); !r) {
      return std::unexpected(r.error());
    } else {
      result = std::move(*r);
    }
    if (op->getNumResults() != 1)
      return {};
    // The result type may know more than the operands (a static dim).
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    for (auto [term, declared] : llvm::zip(result, type.getShape()))
      if (!ShapedType::isDynamic(declared))
        if (auto ok = tie(op, term, declared); !ok)
          return ok;
    terms[op->getResult(0)] = result;
    return {};
  }

  Expected<SmallVector<int64_t>> resultTerms(Operation *op) {
    if (isSizeless(op)) {
      // Sizes of their own, tied by the ops that read them.
      sizeless.push_back(op);
      return SmallVector<int64_t>(of(op->getResult(0)));
    }
    if (isElementwiseKilnOp(op))
      return broadcast(op, SmallVector<Value>(op->getOperands()));
    if (auto t = dyn_cast<TransposeOp>(op)) {
      SmallVector<int64_t> r;
      for (int64_t p : t.getPerm())
        r.push_back(of(t.getX())[p]);
      return r;
    }
    if (auto reshape = dyn_cast<ReshapeOp>(op)) {
      ArrayRef<int64_t> in = reshape.getX().getType().getShape();
      int64_t kept = of(reshape.getX())[llvm::find_if(in, ShapedType::isDynamic) - in.begin()];
      SmallVector<int64_t> r(reshape.getType().getShape());
      for (int64_t &d : r)
        if (ShapedType::isDynamic(d))
          d = kept;
      return r;
    }
    if (isa<SoftmaxOp, LogSoftmaxOp, CumsumOp, FlipOp>(op))
      return of(op->getOperand(0));
    if (auto pad = dyn_cast<PadOp>(op)) {
      SmallVector<int64_t> r = of(pad.getX());
      for (auto [d, term] : llvm::enumerate(r)) {
        std::optional<int64_t> padded =
            classes.sum({term, pad.getLow()[d], pad.getHigh()[d]}, origin(op));
        if (!padded)
          return overflows(op);
        term = *padded;
      }
      return r;
    }
    if (auto slice = dyn_cast<SliceOp>(op)) {
      // x's `?` dims hold the slice (the run checks); the result is static.
      for (auto [d, term] : llvm::enumerate(of(slice.getX())))
        if (slice.getX().getType().isDynamicDim(d))
          classes.atLeast(term, slice.getStop()[d], origin(op));
      return SmallVector<int64_t>(slice.getType().getShape());
    }
    if (isa<MaxPool2dOp, AvgPool2dOp, Conv2dOp>(op)) {
      // Batch dims pass through, the spatial ones are the windows' counts;
      // a conv's channels are its weights'.
      SmallVector<int64_t> r = of(op->getOperand(0));
      size_t rank = r.size();
      SmallVector<int64_t> kernel, stride, padding, dilation = {1, 1};
      if (auto conv = dyn_cast<Conv2dOp>(op)) {
        ArrayRef<int64_t> w = conv.getW().getType().getShape();
        if (auto ok = tie(op, r[1], w[1] * conv.getGroups()); !ok)
          return std::unexpected(ok.error());
        r[1] = w[0];
        kernel.assign(w.begin() + 2, w.end());
        llvm::append_range(stride, conv.getStride());
        llvm::append_range(padding, conv.getPadding());
        dilation.assign(conv.getDilation().begin(), conv.getDilation().end());
      } else {
        auto attributes = [&](auto pool) {
          llvm::append_range(kernel, pool.getKernel());
          llvm::append_range(stride, pool.getStride().value_or(pool.getKernel()));
          llvm::append_range(padding, pool.getPadding());
        };
        if (auto max = dyn_cast<MaxPool2dOp>(op))
          attributes(max);
        else
          attributes(cast<AvgPool2dOp>(op));
      }
      for (int d = 0; d < 2; ++d) {
        // The verifier checked that these fit in int64.
        SizeWindow window{2 * padding[d], dilation[d] * (kernel[d] - 1) + 1, stride[d]};
        std::optional<int64_t> count = classes.slide(r[rank - 2 + d], window, origin(op));
        if (!count)
          return std::unexpected(cannotFit({SizeRule::Kind::Sum, 0, {}, origin(op), {}, window}));
        r[rank - 2 + d] = *count;
      }
      return r;
    }
    if (auto concat = dyn_cast<ConcatOp>(op)) {
      SmallVector<int64_t> r = of(concat.getXs()[0]), lengths;
      for (Value x : concat.getXs()) {
        for (auto [d, term] : llvm::enumerate(of(x)))
          if (static_cast<int64_t>(d) != concat.getDim())
            if (auto ok = tie(op, r[d], term); !ok)
              return std::unexpected(ok.error());
        lengths.push_back(of(x)[concat.getDim()]);
      }
      std::optional<int64_t> length = classes.sum(lengths, origin(op));
      if (!length)
        return overflows(op);
      r[concat.getDim()] = *length;
      return r;
    }
    if (auto broadcast = dyn_cast<BroadcastOp>(op)) {
      SmallVector<int64_t> x = of(broadcast.getX());
      SmallVector<int64_t> r(broadcast.getType().getShape());
      int64_t lead = r.size() - x.size();
      for (int64_t d = lead; d < static_cast<int64_t>(r.size()); ++d)
        if (ShapedType::isDynamic(r[d]) || broadcast.getX().getType().isDynamicDim(d - lead))
          r[d] = x[d - lead];
      return r;
    }
    if (isa<QuantizeOp, DequantizeOp>(op)) {
      // A per-block scale has the values' dims but the last, which is the
      // (static) last dim's block count.
      SmallVector<int64_t> x = of(op->getOperand(0)), scale = of(op->getOperand(1));
      for (size_t d = 0; d < scale.size(); ++d) {
        int64_t want = d + 1 < scale.size()
                           ? x[d]
                           : x.back() / op->getAttrOfType<IntegerAttr>("block_size").getInt();
        if (auto ok = tie(op, scale[d], want); !ok)
          return std::unexpected(ok.error());
      }
      return x;
    }
    if (auto select = dyn_cast<IndexSelectOp>(op)) {
      SmallVector<int64_t> r = of(select.getX());
      r[select.getDim()] = of(select.getIdx()).front();
      return r;
    }
    if (auto gather = dyn_cast<GatherOp>(op)) {
      // The index may be shorter than x but in `dim` (the verifier checks
      // static sizes, the run `?` ones).
      SmallVector<int64_t> x = of(gather.getX()), idx = of(gather.getIdx());
      for (int64_t d = 0; d < static_cast<int64_t>(x.size()); ++d)
        if (d != gather.getDim() && (gather.getX().getType().isDynamicDim(d) ||
                                     gather.getIdx().getType().isDynamicDim(d)))
          classes.atLeast(x[d], idx[d], origin(op));
      return idx;
    }
    if (auto attention = dyn_cast<AttentionOp>(op)) {
      // q [batch..., Lq, E], k [batch..., Lk, E], v [batch..., Lk, Ev]; a
      // mask broadcasts to the scores [batch..., Lq, Lk].
      SmallVector<int64_t> q = of(attention.getQ()), k = of(attention.getK()),
                           v = of(attention.getV());
      size_t rank = q.size();
      for (size_t d = 0; d + 2 < rank; ++d)
        for (int64_t other : {k[d], v[d]})
          if (auto ok = tie(op, q[d], other); !ok)
            return std::unexpected(ok.error());
      for (auto [a, b] : {std::pair{q[rank - 1], k[rank - 1]}, std::pair{k[rank - 2], v[rank - 2]}})
        if (auto ok = tie(op, a, b); !ok)
          return std::unexpected(ok.error());
      SmallVector<int64_t> r(q.begin(), q.end());
      r.back() = v.back();
      if (Value mask = attention.getMask()) {
        SmallVector<int64_t> scores(q.begin(), q.end() - 1);
        scores.push_back(k[rank - 2]);
        ArrayRef<int64_t> shape = cast<RankedTensorType>(mask.getType()).getShape();
        SmallVector<int64_t> m = of(mask);
        for (size_t i = 0; i < m.size(); ++i)
          if (shape[i] != 1)
            if (auto ok = tie(op, m[i], scores[rank - m.size() + i]); !ok)
              return std::unexpected(ok.error());
      }
      return r;
    }
    if (auto scatter = dyn_cast<ScatterAddOp>(op)) {
      // The index no longer than the source, nor than x but in `dim`.
      SmallVector<int64_t> x = of(scatter.getX()), idx = of(scatter.getIdx()),
                           src = of(scatter.getSrc());
      for (int64_t d = 0; d < static_cast<int64_t>(x.size()); ++d) {
        classes.atLeast(src[d], idx[d], origin(op));
        if (d != scatter.getDim())
          classes.atLeast(x[d], idx[d], origin(op));
      }
      return x;
    }
    if (isa<LayerNormOp, RmsNormOp>(op)) {
      SmallVector<int64_t> x = of(op->getOperand(0));
      for (Value param : op->getOperands().drop_front())
        if (auto ok = tie(op, of(param).front(), x.back()); !ok)
          return std::unexpected(ok.error());
      return x;
    }
    if (auto matmul = dyn_cast<MatmulOp>(op)) {
      SmallVector<int64_t> a = of(matmul.getA()), b = of(matmul.getB());
      if (auto ok = tie(op, a.back(), b[b.size() - 2]); !ok)
        return std::unexpected(ok.error());
      SmallVector<int64_t> r(a.begin(), a.end() - 2);
      for (auto [x, y] : llvm::zip(r, ArrayRef(b).drop_back(2)))
        if (auto ok = tie(op, x, y); !ok)
          return std::unexpected(ok.error());
      r.push_back(a[a.size() - 2]);
      r.push_back(b.back());
      return r;
    }
    // The reductions: the kept dims, 1 for reduced ones with keep_dims.
    SmallVector<int64_t> dims;
    if (isa<ArgmaxOp, ArgminOp>(op))
      dims.push_back(op->getAttrOfType<IntegerAttr>("dim").getInt());
    else
      llvm::append_range(dims, op->getAttrOfType<DenseI64ArrayAttr>("dims").asArrayRef());
    bool keep = op->getAttrOfType<BoolAttr>("keep_dims").getValue();
    SmallVector<int64_t> r;
    for (auto [d, term] : llvm::enumerate(of(op->getOperand(0)))) {
      if (!llvm::is_contained(dims, static_cast<int64_t>(d)))
        r.push_back(term);
      else if (keep)
        r.push_back(1);
    }
    return r;
  }

  /// A sum whose terms all became sizes (a `?` tied to a size after the
  /// sum was made) is that size; repeated until none is left.
  Expected<void> settleSums() {
    for (bool changed = true; changed;) {
      changed = false;
      for (auto it = classes.sums.begin(); it != classes.sums.end(); ++it) {
        bool error;
        std::optional<int64_t> total = it->second.value(classes, error);
        if (error)
          return cannotFit(it->second);
        if (!total)
          continue;
        SizeClasses::Rule sum = std::move(it->second);
        classes.sums.erase(it);
        if (!classes.unify(sum.dim, *total, sum.origin))
          return makeError(ErrorKind::InvalidArgument,
                           sum.origin + " makes a dim of size " + std::to_string(*total) +
                               " that must be " + std::to_string(classes.find(sum.dim)) +
                               ": the sizes of its operands can never agree");
        changed = true;
        break;
      }
    }
    return {};
  }

  SizeClasses classes;
  DenseMap<Value, SmallVector<int64_t>> terms;
  DenseMap<int64_t, int64_t> numbers; // a class's symbol -> its number
};
} // namespace

bool lowersWithDynamicDims(Operation *op) {
  if (isElementwiseKilnOp(op) || isSizeless(op))
    return true;
  if (auto reshape = dyn_cast<ReshapeOp>(op))
    return isSimpleDynamicReshape(reshape);
  if (auto matmul = dyn_cast<MatmulOp>(op)) {
    // The batch dims, if any, are one dim on both sides (no broadcast).
    auto a = matmul.getA().getType(), b = matmul.getB().getType();
    return a.getRank() == b.getRank() && a.getRank() <= 3 &&
           (a.getRank() == 2 || a.getDimSize(0) == b.getDimSize(0));
  }
  // argmax/argmin over a `?` dim could meet an empty one at run time,
  // which has no answer, and so could a lookup into one (the verifiers
  // reject a static 0).
  if (isa<ArgmaxOp, ArgminOp, GatherOp, IndexSelectOp, ScatterAddOp>(op))
    return !cast<RankedTensorType>(op->getOperand(0).getType())
                .isDynamicDim(op->getAttrOfType<IntegerAttr>("dim").getInt());
  if (auto broadcast = dyn_cast<BroadcastOp>(op)) {
    // A `?` result dim takes its size from a `?` input dim.
    RankedTensorType in = broadcast.getX().getType(), out = broadcast.getType();
    int64_t lead = out.getRank() - in.getRank();
    for (int64_t d = 0; d < out.getRank(); ++d)
      if (out.isDynamicDim(d) && (d < lead || !in.isDynamicDim(d - lead)))
        return false;
    return true;
  }
  // Convs, pools and attention with a `?` dim have no static empty one:
  // their lowering reshapes around the `?` dim, which an empty static one
  // would leave undefined (and replaces a result it knows to be empty).
  auto staticEmpty = [](Operation *o) {
    return llvm::any_of(llvm::concat<const Type>(o->getOperandTypes(), o->getResultTypes()),
                        [](Type t) { return llvm::is_contained(cast<RankedTensorType>(t).getShape(), 0); });
  };
  // Attention of run-time sizes (fused where the target fuses, else
  // matmul, softmax, matmul: Attention.cpp): head dims static, and at most
  // one `?` batch dim in each operand (above rank 3 the batch dims collapse
  // into one, which takes it: [?, heads, ?, E] as [?, ?, E]; none is
  // statically empty there).
  if (auto attention = dyn_cast<AttentionOp>(op)) {
    auto q = attention.getQ().getType(), v = attention.getV().getType();
    int64_t rank = q.getRank();
    bool staticHeads = !q.isDynamicDim(rank - 1) && !v.isDynamicDim(rank - 1);
    auto oneBatchSize = [&](Value operand) {
      auto shape = cast<RankedTensorType>(operand.getType()).getShape();
      return llvm::count_if(shape.drop_back(std::min<size_t>(2, shape.size())),
                            ShapedType::isDynamic) <= 1;
    };
    return staticHeads &&
           (rank <= 3 || (!staticEmpty(op) &&
                          llvm::all_of(op->getOperands(), oneBatchSize) &&
                          oneBatchSize(attention.getResult())));
  }
  // A conv's input may have `?` dims (its channels are the weights'), its
  // weights and bias not.
  if (auto conv = dyn_cast<Conv2dOp>(op))
    return conv.getW().getType().hasStaticShape() &&
           (!conv.getBias() || conv.getBias().getType().hasStaticShape()) && !staticEmpty(op);
  if (isa<MaxPool2dOp, AvgPool2dOp>(op))
    return !staticEmpty(op);
  // Per-block scales split a static last dim by the block size (a reshape
  // of at most one `?` dim).
  if (isa<QuantizeOp, DequantizeOp>(op)) {
    auto x = cast<RankedTensorType>(op->getOperand(0).getType());
    return !op->getAttr("block_size") ||
           (!x.isDynamicDim(x.getRank() - 1) && x.getNumDynamicDims() <= 1);
  }
  return isa<PadOp, ConcatOp, SliceOp, TransposeOp, FlipOp, SoftmaxOp, LogSoftmaxOp, CumsumOp,
             LayerNormOp, RmsNormOp, ReduceSumOp, ReduceProdOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp, ReduceAnyOp,
             ReduceAllOp, func::ReturnOp>(op);
}

Expected<void> nameRunTimeSizes(func::FuncOp entry, std::vector<TensorSignature> &inputs,
                                std::vector<TensorSignature> &outputs,
                                std::vector<SizeRule> &rules) {
  return ShapeClassBuilder().run(entry, inputs, outputs, rules);
}

Expected<void> annotateSizeSources(func::FuncOp entry) {
  bool missing = false;
  entry.walk([&](Operation *op) {
    missing |= isSizeless(op) && !op->hasAttr(kSizeSourcesAttrName) &&
               !cast<RankedTensorType>(op->getResult(0).getType()).hasStaticShape();
  });
  if (!missing)
    return {};
  std::vector<TensorSignature> inputs(entry.getNumArguments()), outputs(entry.getNumResults());
  std::vector<SizeRule> rules;
  ShapeClassBuilder builder;
  if (auto ok = builder.run(entry, inputs, outputs, rules); !ok)
    return ok;
  for (auto &[op, list] : builder.sources) {
    if (op->hasAttr(kSizeSourcesAttrName))
      continue;
    SmallVector<int64_t> flat;
    for (const SizeSource &source : list)
      flat.append({source.size, source.argument, source.dim});
    op->setAttr(kSizeSourcesAttrName, DenseI64ArrayAttr::get(op->getContext(), flat));
  }
  return {};
}

} // namespace kiln
