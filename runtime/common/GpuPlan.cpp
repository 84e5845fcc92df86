//===- GpuPlan.cpp - a plan with run-time sizes at one run's sizes -------===//
#include "kiln/runtime/common/GpuPlan.h"

#include <cstring>

namespace kiln {

namespace {
std::unexpected<Error> badPlan(const std::string &why) {
  return makeError(ErrorKind::InvalidArgument, "GPU plan: " + why);
}
} // namespace

std::vector<std::byte> KernelLaunch::pushConstants() const {
  std::vector<std::byte> bytes;
  for (const KernelArgument &arg : arguments)
    if (auto *s = std::get_if<ScalarArgument>(&arg)) {
      bytes.resize((bytes.size() + s->bytes - 1) / s->bytes * s->bytes);
      size_t at = bytes.size();
      bytes.resize(at + s->bytes);
      std::memcpy(bytes.data() + at, &s->bits, s->bytes); // little-endian
    }
  return bytes;
}

Expected<void> GpuPlan::checkSizeSteps(size_t dimCount) const {
  auto value = [&](int v, size_t before) { return v >= -1 && static_cast<int64_t>(v) < static_cast<int64_t>(before); };
  for (size_t i = 0; i < sizeSteps.size(); ++i) {
    const SizeStep &s = sizeSteps[i];
    if (s.kind > SizeStep::Kind::Select)
      return badPlan("a size step of unknown kind");
    auto before = [&](int64_t v) { return v >= 0 && static_cast<size_t>(v) < i; };
    bool operands = s.kind == SizeStep::Kind::Constant ||
                    (s.kind == SizeStep::Kind::Dim
                         ? s.a >= 0 && static_cast<size_t>(s.a) < dimCount
                         : before(s.a) && before(s.b) &&
                               (s.kind != SizeStep::Kind::Select || before(s.c)));
    if (!operands)
      return badPlan("size step " + std::to_string(i) + " refers to a value not there");
  }
  size_t n = sizeSteps.size();
  if (!bufferSizes.empty() && bufferSizes.size() != bufferBytes.size())
    return badPlan("buffer sizes do not match its buffers");
  for (int b : bufferSizes)
    if (!value(b, n))
      return badPlan("a buffer's size refers to a value not there");
  for (const KernelLaunch &launch : launches) {
    for (int g : launch.gridSizes)
      if (!value(g, n))
        return badPlan("a grid size refers to a value not there");
    for (const KernelArgument &arg : launch.arguments) {
      if (auto *s = std::get_if<ScalarArgument>(&arg); s && !value(s->size, n))
        return badPlan("a size parameter refers to a value not there");
      if (auto *map = std::get_if<TensorMapArgument>(&arg)) {
        size_t rank = map->view.sizes.size();
        if ((!map->sizeValues.empty() && map->sizeValues.size() != rank) ||
            (!map->strideValues.empty() && map->strideValues.size() != rank))
          return badPlan("a tensor map's run-time sizes do not match its view");
        for (int v : map->sizeValues)
          if (!value(v, n))
            return badPlan("a tensor map's size refers to a value not there");
        for (int v : map->strideValues)
          if (!value(v, n))
            return badPlan("a tensor map's stride refers to a value not there");
      }
    }
  }
  return {};
}

Expected<GpuPlan> GpuPlan::at(std::span<const int64_t> dims) const {
  auto plan = launchesAt(dims);
  if (plan)
    plan->modules = modules;
  return plan;
}

Expected<GpuPlan> GpuPlan::launchesAt(std::span<const int64_t> dims) const {
  if (auto ok = checkSizeSteps(dims.size()); !ok)
    return std::unexpected(ok.error());
  std::vector<int64_t> values;
  for (const SizeStep &s : sizeSteps) {
    using enum SizeStep::Kind;
    int64_t a = s.kind == Constant ? s.a : s.kind == Dim ? dims[s.a] : values[s.a];
    int64_t b = s.kind == Constant || s.kind == Dim ? 0 : values[s.b];
    int64_t r = a;
    bool overflow = false;
    if ((s.kind == DivS || s.kind == CeilDivS || s.kind == RemS) &&
        (b == 0 || (a == INT64_MIN && b == -1)))
      return badPlan("a run-time size divides by zero or overflows");
    switch (s.kind) {
    case Constant:
    case Dim: break;
    case Add: overflow = __builtin_add_overflow(a, b, &r); break;
    case Sub: overflow = __builtin_sub_overflow(a, b, &r); break;
    case Mul: overflow = __builtin_mul_overflow(a, b, &r); break;
    case DivS: r = a / b; break;
    case CeilDivS: r = a / b + ((a % b != 0) && ((a < 0) == (b < 0))); break;
    case RemS: r = a % b; break;
    case MinS: r = std::min(a, b); break;
    case MaxS: r = std::max(a, b); break;
    case Less: r = a < b; break;
    case LessEqual: r = a <= b; break;
    case Equal: r = a == b; break;
    case Select: r = a ? b : values[s.c]; break;
    }
    if (overflow)
      return badPlan("a run-time size overflows");
    values.push_back(r);
  }
  auto fits = [](int64_t v, int64_t limit) { return v >= 0 && v <= limit; };
  GpuPlan plan;
  plan.bufferBytes = bufferBytes;
  plan.inputCount = inputCount;
  plan.outputCount = outputCount;
  plan.launches = launches;
  for (size_t b = 0; b < bufferSizes.size(); ++b)
    if (int v = bufferSizes[b]; v >= 0) {
      if (values[v] < 0)
        return badPlan("a buffer of negative size");
      plan.bufferBytes[b] = static_cast<size_t>(values[v]);
    }
  for (KernelLaunch &launch : plan.launches) {
    for (int d = 0; d < 3; ++d)
      if (int v = launch.gridSizes[d]; v >= 0) {
        if (!fits(values[v], UINT32_MAX))
          return badPlan("a launch grid of " + std::to_string(values[v]) + " blocks");
        launch.shape.grid[d] = static_cast<unsigned>(values[v]);
        launch.gridSizes[d] = -1;
      }
    for (KernelArgument &arg : launch.arguments) {
      if (auto *map = std::get_if<TensorMapArgument>(&arg); map && !map->sizeValues.empty()) {
        // A view of run-time size has no strides until now.
        BufferView &view = map->view;
        view.strides.resize(view.sizes.size());
        auto fill = [&](std::vector<int> &from, std::vector<int64_t> &to) {
          for (size_t d = 0; d < from.size(); ++d)
            if (from[d] >= 0)
              to[d] = values[from[d]];
          from.clear();
        };
        fill(map->sizeValues, view.sizes);
        fill(map->strideValues, view.strides);
      }
      if (auto *s = std::get_if<ScalarArgument>(&arg); s && s->size >= 0) {
        int64_t v = values[s->size];
        if (s->bytes < 8 && !fits(v, (int64_t(1) << (s->bytes * 8 - 1)) - 1))
          return badPlan("a run-time size of " + std::to_string(v) +
                         " does not fit the kernel's " + std::to_string(s->bytes * 8) +
                         "-bit index");
        s->bits = static_cast<uint64_t>(v);
        s->size = -1;
      }
    }
  }
  return plan;
}

} // namespace kiln
