//===- CachedProgram.cpp - compiled programs as disk cache entries --------===//
#include "CachedProgram.h"
#include "kiln/backend/Engine.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>
#include <utility>

namespace kiln {
using nlohmann::json;

namespace {
/// An integer of type T, or an exception: nlohmann's get<T>() would cast a
/// float or an out-of-range number (undefined behaviour; fuzz-cache-entry).
template <typename T> T integer(const json &j) {
  if (j.is_number_unsigned() && std::in_range<T>(j.get<uint64_t>()))
    return static_cast<T>(j.get<uint64_t>());
  if (j.is_number_integer() && !j.is_number_unsigned() && std::in_range<T>(j.get<int64_t>()))
    return static_cast<T>(j.get<int64_t>());
  throw std::invalid_argument("an integer out of range: " + j.dump());
}

template <typename T> std::vector<T> integers(const json &list) {
  std::vector<T> values;
  for (const json &j : list.get<std::vector<json>>())
    values.push_back(integer<T>(j));
  return values;
}

json signatureJson(const std::vector<TensorSignature> &tensors) {
  json list = json::array();
  for (const TensorSignature &t : tensors)
    list.push_back({{"dtype", dtypeName(t.dtype)}, {"shape", t.shape}});
  return list;
}

json rulesJson(const std::vector<SizeRule> &rules) {
  json list = json::array();
  for (const SizeRule &r : rules) {
    json rule = {{"kind", static_cast<int>(r.kind)}, {"dim", r.dim}, {"terms", r.terms},
                 {"origin", r.origin}};
    if (r.window)
      rule["window"] = {r.window->padding, r.window->span, r.window->stride};
    list.push_back(std::move(rule));
  }
  return list;
}

std::vector<SizeRule> rulesOf(const json &list) {
  std::vector<SizeRule> rules;
  for (const json &r : list.get<std::vector<json>>()) {
    int kind = integer<int>(r.at("kind"));
    if (kind < 0 || kind > static_cast<int>(SizeRule::Kind::AtLeast))
      throw std::invalid_argument("a size rule of unknown kind");
    std::optional<SizeWindow> window;
    if (r.contains("window")) {
      std::vector<int64_t> w = integers<int64_t>(r.at("window"));
      if (w.size() != 3 || w[0] < 0 || w[1] < 1 || w[2] < 1)
        throw std::invalid_argument("a size rule's window is not [padding, span, stride]");
      window = SizeWindow{w[0], w[1], w[2]};
    }
    rules.push_back({static_cast<SizeRule::Kind>(kind), integer<int64_t>(r.at("dim")),
                     integers<int64_t>(r.at("terms")), r.at("origin").get<std::string>(),
                     window});
  }
  return rules;
}

json planJson(const GpuPlan &plan) {
  json launches = json::array();
  for (const KernelLaunch &l : plan.launches) {
    json arguments = json::array();
    auto viewJson = [](const BufferView &v) -> json {
      return {{"buffer", v.buffer}, {"offset", v.offset}, {"sizes", v.sizes},
              {"strides", v.strides}};
    };
    for (const KernelArgument &a : l.arguments) {
      if (auto *s = std::get_if<ScalarArgument>(&a))
        arguments.push_back({{"scalar", s->bits}, {"bytes", s->bytes}, {"size", s->size}});
      else if (auto *map = std::get_if<TensorMapArgument>(&a))
        arguments.push_back({{"tensor_map", viewJson(map->view)},
                             {"element_bytes", map->elementBytes},
                             {"box", map->box},
                             {"swizzle_bytes", map->swizzleBytes},
                             {"size_values", map->sizeValues},
                             {"stride_values", map->strideValues}});
      else
        arguments.push_back(viewJson(std::get<BufferView>(a)));
    }
    launches.push_back({{"module", l.module}, {"kernel", l.kernel},
                        {"grid", l.shape.grid}, {"block", l.shape.block},
                        {"shared_memory_bytes", l.shape.sharedMemoryBytes},
                        {"grid_sizes", l.gridSizes}, {"arguments", arguments}});
  }
  json steps = json::array();
  for (const SizeStep &s : plan.sizeSteps)
    steps.push_back({static_cast<int>(s.kind), s.a, s.b, s.c});
  return {{"buffer_bytes", plan.bufferBytes}, {"input_count", plan.inputCount},
          {"output_count", plan.outputCount}, {"launches", launches},
          {"size_steps", steps}, {"buffer_sizes", plan.bufferSizes}};
}

std::vector<TensorSignature> signatureOf(const json &list) {
  std::vector<TensorSignature> tensors;
  for (const json &t : list.get<std::vector<json>>()) {
    auto dtype = dtypeFromName(t.at("dtype").get<std::string>());
    if (!dtype)
      throw std::invalid_argument("unknown dtype");
    tensors.push_back({*dtype, integers<int64_t>(t.at("shape"))});
  }
  return tensors;
}

/// The plan in `j`, its indices checked against `moduleCount` and its buffers.
GpuPlan planOf(const json &j, size_t moduleCount) {
  GpuPlan plan;
  plan.bufferBytes = integers<size_t>(j.at("buffer_bytes"));
  plan.inputCount = integer<size_t>(j.at("input_count"));
  plan.outputCount = integer<size_t>(j.at("output_count"));
  if (plan.inputCount > plan.bufferBytes.size() ||
      plan.outputCount > plan.bufferBytes.size() - plan.inputCount)
    throw std::invalid_argument("more inputs and outputs than buffers");
  for (const json &l : j.at("launches").get<std::vector<json>>()) {
    KernelLaunch launch;
    launch.module = integer<int>(l.at("module"));
    if (launch.module < 0 || static_cast<size_t>(launch.module) >= moduleCount)
      throw std::invalid_argument("a launch of a module that is not there");
    launch.kernel = l.at("kernel").get<std::string>();
    auto grid = integers<unsigned>(l.at("grid")), block = integers<unsigned>(l.at("block"));
    if (grid.size() != 3 || block.size() != 3)
      throw std::invalid_argument("a grid or block of other than 3 sizes");
    std::copy(grid.begin(), grid.end(), launch.shape.grid.begin());
    std::copy(block.begin(), block.end(), launch.shape.block.begin());
    launch.shape.sharedMemoryBytes = integer<unsigned>(l.at("shared_memory_bytes"));
    // Plans with run-time sizes only (static plans may omit what follows).
    if (l.contains("grid_sizes")) {
      auto gridSizes = integers<int>(l.at("grid_sizes"));
      if (gridSizes.size() != 3)
        throw std::invalid_argument("grid sizes of other than 3 dims");
      std::copy(gridSizes.begin(), gridSizes.end(), launch.gridSizes.begin());
    }
    for (const json &a : l.at("arguments").get<std::vector<json>>()) {
      if (a.contains("scalar")) {
        ScalarArgument s{integer<uint64_t>(a.at("scalar")), integer<unsigned>(a.at("bytes")),
                         a.contains("size") ? integer<int>(a.at("size")) : -1};
        if (s.bytes != 1 && s.bytes != 2 && s.bytes != 4 && s.bytes != 8)
          throw std::invalid_argument("a scalar argument of odd size");
        launch.arguments.push_back(s);
        continue;
      }
      auto viewOf = [&](const json &v) {
        BufferView view{integer<int>(v.at("buffer")), integer<int64_t>(v.at("offset")),
                        integers<int64_t>(v.at("sizes")), integers<int64_t>(v.at("strides"))};
        if (view.buffer < 0 || static_cast<size_t>(view.buffer) >= plan.bufferBytes.size())
          throw std::invalid_argument("an argument of a buffer that is not there");
        return view;
      };
      if (a.contains("tensor_map")) {
        // The runtime checks the rest when it encodes the map.
        launch.arguments.push_back(TensorMapArgument{
            viewOf(a.at("tensor_map")), integer<unsigned>(a.at("element_bytes")),
            integers<int64_t>(a.at("box")), integer<unsigned>(a.at("swizzle_bytes")),
            integers<int>(a.value("size_values", json::array())),
            integers<int>(a.value("stride_values", json::array()))});
        continue;
      }
      launch.arguments.push_back(viewOf(a));
    }
    plan.launches.push_back(std::move(launch));
  }
  for (const json &s : j.value("size_steps", json::array()).get<std::vector<json>>()) {
    auto step = integers<int64_t>(s);
    if (step.size() != 4 || step[0] < 0 || step[0] > static_cast<int>(SizeStep::Kind::Select))
      throw std::invalid_argument("a malformed size step");
    plan.sizeSteps.push_back({static_cast<SizeStep::Kind>(step[0]), step[1], step[2], step[3]});
  }
  plan.bufferSizes = integers<int>(j.value("buffer_sizes", json::array()));
  return plan;
}
} // namespace

CacheEntry encodeCachedProgram(std::string_view kind, const CachedProgram &cached) {
  const CompiledProgram &p = cached.program;
  json stages = json::array();
  for (const StageTime &s : p.stageTimes)
    stages.push_back({{"stage", s.stage}, {"ms", s.milliseconds}});
  json metadata = {{"kind", kind},
                   {"inputs", signatureJson(p.inputs)},
                   {"outputs", signatureJson(p.outputs)},
                   {"size_rules", rulesJson(p.sizeRules)},
                   {"kernel_count", p.kernelCount},
                   {"stage_times", stages},
                   {"tune_keys", p.tuneKeys},
                   {"untuned_configs", p.untunedConfigs}};
  CacheEntry entry;
  if (kind == "cpu") {
    entry.blobs = {cached.object};
  } else {
    metadata["plan"] = planJson(cached.plan);
    entry.blobs = cached.plan.modules;
    if (kind == "vulkan")
      entry.blobs.push_back(cached.pipelineCache);
  }
  entry.metadata = metadata.dump();
  return entry;
}

Expected<CachedProgram> decodeCachedProgram(std::string_view kind, const CacheEntry &entry) {
  auto bad = [&](const std::string &why) {
    return makeError(ErrorKind::InvalidArgument, "cache entry: " + why);
  };
  json metadata = json::parse(entry.metadata, nullptr, false);
  if (!metadata.is_object())
    return bad("its metadata is not a JSON object");
  try {
    if (metadata.at("kind").get<std::string>() != kind)
      return bad("a " + metadata.at("kind").get<std::string>() + " program, not " +
                 std::string(kind));
    CachedProgram cached;
    CompiledProgram &p = cached.program;
    p.inputs = signatureOf(metadata.at("inputs"));
    p.outputs = signatureOf(metadata.at("outputs"));
    p.kernelCount = integer<size_t>(metadata.at("kernel_count"));
    for (const json &s : metadata.at("stage_times").get<std::vector<json>>())
      p.stageTimes.push_back({s.at("stage").get<std::string>(), s.at("ms").get<double>()});
    if (metadata.contains("tune_keys"))
      p.tuneKeys = metadata.at("tune_keys").get<std::vector<std::string>>();
    if (metadata.contains("untuned_configs"))
      p.untunedConfigs =
          metadata.at("untuned_configs").get<std::map<std::string, std::string>>();
    // Required of a program of run-time sizes: without its bounds it would
    // run slices and lookups unchecked.
    bool dynamic = std::ranges::any_of(p.inputs, [](const TensorSignature &t) {
      return t.isDynamic();
    });
    if (metadata.contains("size_rules") || dynamic)
      p.sizeRules = rulesOf(metadata.at("size_rules"));
    // Run-time sizes (negative dims): each one an output or a rule has is
    // an input's or an earlier sum's, and each sum defines one of its own.
    std::set<int64_t> known;
    for (const TensorSignature &t : p.inputs)
      known.insert(t.shape.begin(), t.shape.end());
    std::set<int64_t> sums;
    for (const SizeRule &r : p.sizeRules)
      if (r.kind == SizeRule::Kind::Sum && (r.dim >= 0 || !sums.insert(r.dim).second))
        return bad("its size rules define a size twice or a static one");
    for (const SizeRule &r : p.sizeRules) {
      for (int64_t t : r.terms)
        if (t < 0 && (!known.contains(t) ||
                      (r.kind == SizeRule::Kind::Sum && sums.contains(t) && t == r.dim)))
          return bad("its size rules read a size before it is known");
      if (r.kind == SizeRule::Kind::Sum)
        known.insert(r.dim);
      else if (r.dim < 0 && !known.contains(r.dim))
        return bad("its size rules read a size before it is known");
    }
    for (const auto *tensors : {&p.inputs, &p.outputs})
      for (const TensorSignature &t : *tensors)
        for (int64_t d : t.shape)
          if (d < 0 && !known.contains(d))
            return bad("its signature has a run-time size that no input gives");
    // Runs allocate every input and output by its signature (a run-time
    // size counts as 1 here).
    std::vector<size_t> tensorBytesList;
    for (const auto *tensors : {&p.inputs, &p.outputs})
      for (const TensorSignature &t : *tensors) {
        std::vector<int64_t> shape = t.shape;
        std::ranges::replace_if(shape, [](int64_t d) { return d < 0; }, 1);
        auto bytes = tensorBytes(t.dtype, shape);
        if (!bytes)
          return bad("its signature: " + bytes.error().message);
        tensorBytesList.push_back(*bytes);
      }
    if (kind == "cpu") {
      if (entry.blobs.size() != 1)
        return bad("a CPU program has one object file");
      cached.object = entry.blobs[0];
      return cached;
    }
    // GPU: the modules, then (Vulkan) the pipeline-cache data.
    if (entry.blobs.empty() && kind == "vulkan")
      return bad("no pipeline-cache data");
    size_t modules = entry.blobs.size() - (kind == "vulkan" ? 1 : 0);
    cached.plan = planOf(metadata.at("plan"), modules);
    cached.plan.modules.assign(entry.blobs.begin(), entry.blobs.begin() + modules);
    if (kind == "vulkan")
      cached.pipelineCache = entry.blobs.back();
    // The runtime copies each input and output by the plan's byte counts
    // (evaluated at run time where the signature has run-time sizes).
    if (cached.plan.inputCount != p.inputs.size() || cached.plan.outputCount != p.outputs.size())
      return bad("its plan's buffers do not match its signature");
    if (auto ok = cached.plan.checkSizeSteps(Program::dimCountOf(p)); !ok)
      return bad(ok.error().message);
    for (size_t i = 0; i < tensorBytesList.size(); ++i)
      if (tensorBytesList[i] != cached.plan.bufferBytes[i] &&
          (cached.plan.bufferSizes.empty() || cached.plan.bufferSizes[i] < 0))
        return bad("its plan's buffers do not match its signature");
    return cached;
  } catch (const json::exception &e) {
    return bad(std::string("malformed metadata: ") + e.what());
  } catch (const std::invalid_argument &e) {
    return bad(std::string("malformed metadata: ") + e.what());
  }
}

} // namespace kiln
