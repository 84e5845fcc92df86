//===- RunTimeSizes.cpp - one run's sizes from its inputs -----------------===//
#include "RunTimeSizes.h"

#include <map>
#include <set>

namespace kiln {

namespace {
std::string dimName(size_t input, size_t dim) {
  return "input #" + std::to_string(input) + " dim " + std::to_string(dim);
}
} // namespace

Expected<RunTimeSizes> bindRunTimeSizes(const std::vector<TensorSignature> &inputs,
                                        const std::vector<TensorSignature> &outputs,
                                        const std::vector<SizeRule> &rules,
                                        const std::vector<std::vector<int64_t>> &shapes) {
  struct Binding {
    int64_t size;
    size_t input, dim; // where it was first seen (input == inputs.size(): a sum)
  };
  std::map<int64_t, Binding> bound; // run-time size name -> its size
  // The sizes sums define are computed, and their input dims checked, after
  // the others are bound.
  std::set<int64_t> sums;
  for (const SizeRule &rule : rules)
    if (rule.kind == SizeRule::Kind::Sum)
      sums.insert(rule.dim);
  RunTimeSizes sizes;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<int64_t> &want = inputs[i].shape, &got = shapes[i];
    auto differs = [&](std::string where) {
      return makeError(ErrorKind::InvalidArgument,
                       "input #" + std::to_string(i) + " is " +
                           describeTensorType(inputs[i].dtype, got) + ", the program expects " +
                           inputs[i].describe() + where);
    };
    if (got.size() != want.size())
      return differs("");
    for (size_t d = 0; d < want.size(); ++d) {
      if (want[d] >= 0 && got[d] != want[d])
        return differs(" (dim " + std::to_string(d) + ")");
      if (want[d] < 0 && !sums.count(want[d])) {
        auto [it, fresh] = bound.try_emplace(want[d], Binding{got[d], i, d});
        if (!fresh && it->second.size != got[d])
          return makeError(ErrorKind::InvalidArgument,
                           dimName(i, d) + " is " + std::to_string(got[d]) + " but " +
                               dimName(it->second.input, it->second.dim) + " is " +
                               std::to_string(it->second.size) +
                               ": the program needs them equal (one run-time size)");
      }
      sizes.dims.push_back(got[d]);
    }
  }
  auto corrupt = [] {
    // The compiler and the disk cache rule it out.
    return makeError(ErrorKind::InvalidArgument,
                     "the program has a run-time size no input gives");
  };
  auto valueOf = [&](int64_t term) -> std::optional<int64_t> {
    if (term >= 0)
      return term;
    auto it = bound.find(term);
    return it == bound.end() ? std::nullopt : std::optional(it->second.size);
  };
  for (const SizeRule &rule : rules) {
    int64_t total = 0;
    for (int64_t t : rule.terms) {
      std::optional<int64_t> v = valueOf(t);
      if (!v)
        return corrupt();
      if (__builtin_add_overflow(total, *v, &total))
        return makeError(ErrorKind::InvalidArgument,
                         rule.origin + " makes a size that overflows int64");
    }
    if (rule.window) {
      std::optional<int64_t> count = rule.window->count(total);
      if (!count) {
        const Binding *from = rule.terms.size() == 1 && rule.terms[0] < 0
                                  ? &bound.at(rule.terms[0])
                                  : nullptr;
        return makeError(ErrorKind::InvalidArgument,
                         rule.origin + " slides a window of " +
                             std::to_string(rule.window->span) + " over " +
                             (from && from->input < inputs.size()
                                  ? dimName(from->input, from->dim) + " (" +
                                        std::to_string(total) + ")"
                                  : "a dim of " + std::to_string(total)) +
                             " padded by " + std::to_string(rule.window->padding / 2) +
                             " on each side: it does not fit");
      }
      total = *count;
    }
    if (rule.kind == SizeRule::Kind::Sum) {
      if (rule.dim >= 0 || !bound.try_emplace(rule.dim, Binding{total, inputs.size(), 0}).second)
        return corrupt();
      continue;
    }
    std::optional<int64_t> dim = valueOf(rule.dim);
    if (!dim)
      return corrupt();
    bool holds = rule.kind == SizeRule::Kind::AtLeast ? *dim >= total : *dim == total;
    if (holds)
      continue;
    // Named by the inputs the sizes come from: "input #1 dim 0 (5)".
    auto describe = [&](int64_t term) {
      if (term >= 0)
        return std::to_string(term);
      const Binding &b = bound.at(term);
      return (b.input < inputs.size() ? dimName(b.input, b.dim) : std::string("a sum")) + " (" +
             std::to_string(b.size) + ")";
    };
    std::string terms;
    for (int64_t t : rule.terms)
      terms += (terms.empty() ? "" : " + ") + describe(t);
    if (rule.window)
      terms = "the " + std::to_string(total) + " places of its window of " +
              std::to_string(rule.window->span) + " along " + terms + " padded by " +
              std::to_string(rule.window->padding / 2) + " on each side";
    const char *relation =
        rule.kind == SizeRule::Kind::AtLeast ? " to be at least " : " to equal ";
    if (auto it = bound.find(rule.dim); it != bound.end() && it->second.input < inputs.size())
      return makeError(ErrorKind::InvalidArgument,
                       dimName(it->second.input, it->second.dim) + " is " +
                           std::to_string(*dim) + " but " + rule.origin +
                           (rule.kind == SizeRule::Kind::AtLeast ? " needs at least "
                                                                 : " needs it to be ") +
                           std::to_string(total) +
                           (std::ranges::all_of(rule.terms, [](int64_t t) { return t >= 0; })
                                ? std::string()
                                : " (" + terms + ")"));
    if (rule.terms.size() > 1)
      terms += " = " + std::to_string(total);
    return makeError(ErrorKind::InvalidArgument,
                     rule.origin + " needs " + describe(rule.dim) + relation + terms);
  }
  // Input dims of a sum's size: what the sum made them.
  for (size_t i = 0; i < inputs.size(); ++i)
    for (size_t d = 0; d < inputs[i].shape.size(); ++d)
      if (int64_t want = inputs[i].shape[d]; sums.count(want)) {
        int64_t size = bound.at(want).size;
        if (shapes[i][d] != size)
          return makeError(ErrorKind::InvalidArgument,
                           dimName(i, d) + " is " + std::to_string(shapes[i][d]) +
                               " but the program makes that size " + std::to_string(size));
      }
  for (const TensorSignature &out : outputs) {
    std::vector<int64_t> shape;
    for (int64_t d : out.shape) {
      std::optional<int64_t> v = valueOf(d);
      if (!v)
        return corrupt();
      shape.push_back(*v);
    }
    sizes.dims.insert(sizes.dims.end(), shape.begin(), shape.end());
    sizes.outputShapes.push_back(std::move(shape));
  }
  return sizes;
}

} // namespace kiln
