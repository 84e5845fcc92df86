//===- Engine.cpp - compile kiln programs and run them on a device -------===//
#include "kiln/backend/Engine.h"
#include "CachedProgram.h"
#include "RunTimeSizes.h"
#include "kiln/backend/CompilerLibrary.h"
#include "kiln/BuildId.h"
#include "kiln/backend/Autotune.h"

#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <thread>

#ifndef KILN_VERSION
#define KILN_VERSION "dev"
#endif

namespace kiln {

Expected<DeviceId> DeviceId::parse(std::string_view text) {
  std::string_view name = text.substr(0, text.find(':'));
  const TargetKind *kind = nullptr;
  std::string expected;
  auto kinds = targetKinds();
  for (size_t i = 0; i < kinds.size(); ++i) {
    if (kinds[i]->name == name)
      kind = kinds[i];
    expected += std::string(i == 0 ? "" : i + 1 == kinds.size() ? " or " : ", ") +
                std::string(kinds[i]->name) + "[:N]";
  }
  if (!kind)
    return makeError(ErrorKind::InvalidArgument,
                     "unknown device '" + std::string(text) + "' (expected " + expected + ")");
  DeviceId id{kind->type, 0};
  if (name.size() < text.size()) {
    std::string_view n = text.substr(name.size() + 1);
    auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), id.index);
    if (ec != std::errc() || end != n.data() + n.size() || id.index < 0)
      return makeError(ErrorKind::InvalidArgument,
                       "bad device index in '" + std::string(text) + "'");
  }
  return id;
}

std::string DeviceId::toString() const {
  return std::string(targetKind(type).name) + ":" + std::to_string(index);
}

Expected<std::vector<HostTensor>>
Program::run(const std::vector<HostTensor> &inputs) const {
  const auto &want = compiled.inputs;
  if (inputs.size() != want.size())
    return makeError(ErrorKind::InvalidArgument,
                     "program takes " + std::to_string(want.size()) +
                         " inputs, got " + std::to_string(inputs.size()));
  std::vector<void *> buffers;
  std::vector<std::vector<int64_t>> shapes;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].dtype != want[i].dtype)
      return makeError(ErrorKind::InvalidArgument,
                       "input #" + std::to_string(i) + " is " +
                           describeTensorType(inputs[i].dtype, inputs[i].shape) +
                           ", the program expects " + want[i].describe());
    buffers.push_back(const_cast<std::byte *>(inputs[i].data.data()));
    shapes.push_back(inputs[i].shape);
  }
  auto sizes = bindRunTimeSizes(want, compiled.outputs, compiled.sizeRules, shapes);
  if (!sizes)
    return std::unexpected(sizes.error());
  std::vector<HostTensor> outputs;
  outputs.reserve(compiled.outputs.size());
  for (size_t i = 0; i < compiled.outputs.size(); ++i) {
    outputs.emplace_back(compiled.outputs[i].dtype, sizes->outputShapes[i]);
    buffers.push_back(outputs.back().data.data());
  }
  if (auto ok = runUnchecked(buffers.data(), sizes->dims.data()); !ok)
    return std::unexpected(ok.error());
  return outputs;
}

size_t Program::dimCountOf(const CompiledProgram &compiled) {
  size_t n = 0;
  for (const auto *signatures : {&compiled.inputs, &compiled.outputs})
    for (const TensorSignature &s : *signatures)
      n += s.shape.size();
  return n;
}

bool Program::hasDynamicDims() const {
  for (const auto *signatures : {&compiled.inputs, &compiled.outputs})
    for (const TensorSignature &s : *signatures)
      if (s.isDynamic())
        return true;
  return false;
}

Engine::Engine(DeviceId id, std::unique_ptr<Target> target, DiskCacheConfig diskConfig)
    : deviceId(id), target_(std::move(target)), disk(std::move(diskConfig), kBuildId) {}
Engine::~Engine() = default;

Expected<std::unique_ptr<Engine>> Engine::create(DeviceId device) {
  auto disk = DiskCacheConfig::fromEnvironment();
  if (!disk)
    return std::unexpected(disk.error());
  return create(device, std::move(*disk));
}

Expected<std::unique_ptr<Engine>> Engine::create(DeviceId device, DiskCacheConfig disk) {
  auto target = targetKind(device.type).open(device.index);
  if (!target)
    return std::unexpected(target.error());
  return std::unique_ptr<Engine>(new Engine(device, std::move(*target), std::move(disk)));
}

namespace {
std::atomic<size_t> mlirContexts = 0;
} // namespace

size_t Engine::mlirContextsCreated() { return mlirContexts; }

Expected<Compiler *> Engine::compiler() {
  if (!compilerInstance) {
    auto created = loadCompiler();
    if (!created)
      return std::unexpected(created.error());
    compilerInstance = std::move(*created);
    ++mlirContexts;
  }
  return compilerInstance.get();
}

size_t Engine::parseCount() const {
  return compilerInstance ? compilerInstance->parseCount() : 0;
}

namespace {
/// The key of a program stored under `base` compiled with the configs of
/// `tuneKeys` that `options` name (no tune keys: `base` itself). The
/// configs go before the program, which stays the last part, so that no
/// program text can end in what reads as another key's parts.
CacheKey tunedDiskKey(CacheKey base, const std::vector<std::string> &tuneKeys,
                      const CompileOptions &options) {
  if (!tuneKeys.empty())
    base.parts.emplace(base.parts.end() - 1, "tuned", options.tunedConfigsText(tuneKeys));
  return base;
}
} // namespace

std::shared_ptr<Program> Engine::loadFromDisk(const CacheKey &base,
                                              const CompileOptions &options) {
  std::string_view kind = targetKind(deviceId.type).name;
  auto read = [&](const CacheKey &key) -> std::optional<std::pair<CacheEntry, CachedProgram>> {
    auto entry = disk.load(key);
    if (!entry)
      return std::nullopt;
    auto cached = decodeCachedProgram(kind, *entry);
    if (!cached) {
      disk.reportBad(key, cached.error().message);
      return std::nullopt;
    }
    return std::pair{std::move(*entry), std::move(*cached)};
  };
  // `base` holds the program as last used (with tune keys, an alias of the
  // entry of those configs): where its configs are not `options`', the
  // entry of `options`' configs is wanted, and `base` then names it.
  auto found = read(base);
  if (!found)
    return nullptr;
  CacheKey wanted = tunedDiskKey(base, found->second.program.tuneKeys, options);
  if (wanted.parts.size() > base.parts.size()) {
    CacheKey configs = wanted; // entry, codegen, tuned: the key's start
    configs.parts.pop_back();
    if (!found->first.key.starts_with(disk.keyText(configs))) {
      if (!(found = read(wanted)))
        return nullptr;
      disk.storeAlias(base, found->first.key);
    }
  }
  auto program = target_->load(found->second);
  if (!program) {
    disk.reportBad(wanted, "it does not load: " + program.error().message);
    return nullptr;
  }
  ++diskHits;
  return *program;
}

Expected<std::shared_ptr<Program>> Engine::compile(std::string_view source,
                                                   const CompileOptions &given) {
  CompileOptions options = Autotuner::instance().apply(target_->fingerprint(), given);
  auto program = compileAsGiven(source, options);
  if (program) {
    Autotuner::countHits(options, (*program)->tuneKeys());
    return program;
  }
  // Only a code generation failure may be the tuned configs' doing.
  if (options.tuned.empty() || !given.tuned.empty() || program.error().kind != ErrorKind::Compile)
    return program;
  std::fprintf(stderr, "kiln: autotune: the program does not compile with its tuned configs "
                       "(%s); using the defaults\n", program.error().message.c_str());
  return compileAsGiven(source, given);
}

Expected<std::shared_ptr<Program>> Engine::compileAsGiven(std::string_view source,
                                                          const CompileOptions &given) {
  CompileOptions options = target_->withDeviceDefaults(given);
  std::lock_guard lock(mutex);
  const std::string &target = target_->fingerprint();
  std::string codegen = options.codegenKey();
  // Compiles that dump or take overrides have keys of their own.
  bool dumps = !options.dumpDir.empty() || !options.overrideDir.empty();
  std::string suffix = "|" + options.entry + "|" + target + "|" + codegen +
                       options.tuneTableKey() + "|" + KILN_VERSION +
                       (dumps ? "|dump=" + options.dumpDir + "|override=" + options.overrideDir
                              : "");
  auto hash = [](std::string_view text) {
    return std::to_string(std::hash<std::string_view>{}(text));
  };
  // On disk a program is keyed by the configs of its own tune keys only
  // (loadFromDisk): tuning another kernel leaves its entry valid.
  auto diskKey = [&](const char *form, std::string_view text) {
    return CacheKey{target, {{"entry", options.entry}, {"codegen", codegen},
                             {form, std::string(text)}}};
  };
  // Fast path: this exact text was seen before, in this process or (no
  // MLIR either way) on disk. Compiles that dump or take overrides never
  // load from disk, so that every stage is written or overridden.
  std::string textKey = "text:" + hash(source) + suffix;
  CacheKey textDiskKey = diskKey("program", source);
  if (auto it = cache.find(textKey); it != cache.end()) {
    ++hits;
    return it->second;
  }
  if (auto program = dumps ? nullptr : loadFromDisk(textDiskKey, options))
    return cache[textKey] = program;
  // The key proper hashes the canonical IR, so reformatted text hits too;
  // on a miss the compile takes the same parse.
  auto compiler = this->compiler();
  if (!compiler)
    return std::unexpected(compiler.error());
  auto parsed = (*compiler)->parse(source);
  if (!parsed)
    return std::unexpected(parsed.error());
  std::string key = "ir:" + hash(parsed->canonicalText()) + suffix;
  CacheKey irDiskKey = diskKey("canonical", parsed->canonicalText());
  if (auto it = cache.find(key); it != cache.end()) {
    ++hits;
    cache[textKey] = it->second;
    return it->second;
  }
  if (auto program = dumps ? nullptr : loadFromDisk(irDiskKey, options)) {
    const auto &tuneKeys = program->tuneKeys();
    disk.storeAlias(textDiskKey, tunedDiskKey(irDiskKey, tuneKeys, options));
    if (!tuneKeys.empty())
      disk.storeAlias(tunedDiskKey(textDiskKey, tuneKeys, options),
                      tunedDiskKey(irDiskKey, tuneKeys, options));
    return cache[key] = cache[textKey] = program;
  }
  CachedProgram cached;
  auto program = target_->compile(**compiler, std::move(*parsed), options, cached);
  if (!program)
    return std::unexpected(program.error());
  ++compiles;
  // A program with hand-edited stages is not its program's kernel.
  if (!cached.program.overridden) {
    const auto &tuneKeys = cached.program.tuneKeys;
    CacheKey stored = tunedDiskKey(irDiskKey, tuneKeys, options);
    CacheEntry entry = encodeCachedProgram(targetKind(deviceId.type).name, cached);
    disk.store(stored, std::move(entry.metadata), std::move(entry.blobs));
    disk.storeAlias(textDiskKey, stored);
    if (!tuneKeys.empty()) {
      disk.storeAlias(irDiskKey, stored);
      disk.storeAlias(tunedDiskKey(textDiskKey, tuneKeys, options), stored);
    }
  }
  cache[key] = cache[textKey] = *program;
  return *program;
}

} // namespace kiln
