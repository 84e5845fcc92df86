//===- Engine.cpp - compile kiln programs and run them on a device -------===//
#include "kiln/backend/Engine.h"
#include "CachedProgram.h"
#include "kiln/BuildId.h"

#include <atomic>
#include <charconv>
#include <chrono>
#include <thread>

#ifndef KILN_VERSION
#define KILN_VERSION "dev"
#endif

namespace kiln {

Expected<DeviceId> DeviceId::parse(std::string_view text) {
  DeviceId id;
  std::string_view kind = text.substr(0, text.find(':'));
  if (kind == "cpu")
    id.type = DeviceType::Cpu;
  else if (kind == "cuda")
    id.type = DeviceType::Cuda;
  else if (kind == "vulkan")
    id.type = DeviceType::Vulkan;
  else
    return makeError(ErrorKind::InvalidArgument,
                     "unknown device '" + std::string(text) +
                         "' (expected cpu, cuda[:N] or vulkan[:N])");
  if (kind.size() < text.size()) {
    std::string_view n = text.substr(kind.size() + 1);
    auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), id.index);
    if (ec != std::errc() || end != n.data() + n.size() || id.index < 0)
      return makeError(ErrorKind::InvalidArgument,
                       "bad device index in '" + std::string(text) + "'");
  }
  return id;
}

std::string DeviceId::toString() const {
  const char *names[] = {"cpu", "cuda", "vulkan"};
  return std::string(names[static_cast<int>(type)]) + ":" + std::to_string(index);
}

Expected<std::vector<HostTensor>>
Program::run(const std::vector<HostTensor> &inputs) const {
  const auto &want = compiled.inputs;
  if (inputs.size() != want.size())
    return makeError(ErrorKind::InvalidArgument,
                     "program takes " + std::to_string(want.size()) +
                         " inputs, got " + std::to_string(inputs.size()));
  std::vector<void *> buffers;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].dtype != want[i].dtype || inputs[i].shape != want[i].shape)
      return makeError(ErrorKind::InvalidArgument,
                       "input #" + std::to_string(i) + " is " +
                           describeTensorType(inputs[i].dtype, inputs[i].shape) +
                           ", the program expects " +
                           describeTensorType(want[i].dtype, want[i].shape));
    buffers.push_back(const_cast<std::byte *>(inputs[i].data.data()));
  }
  std::vector<HostTensor> outputs;
  outputs.reserve(compiled.outputs.size());
  for (const TensorSignature &s : compiled.outputs) {
    outputs.emplace_back(s.dtype, s.shape);
    buffers.push_back(outputs.back().data.data());
  }
  if (auto ok = runner(buffers.data()); !ok)
    return std::unexpected(ok.error());
  return outputs;
}

/// The intermediate buffers of `plan`: after its inputs and outputs.
static std::vector<size_t> temporariesOf(const GpuPlan &plan) {
  return {plan.bufferBytes.begin() + plan.inputCount + plan.outputCount,
          plan.bufferBytes.end()};
}

Program::Program(CompiledProgram compiled, std::shared_ptr<VulkanProgram> vulkan)
    : compiled(std::move(compiled)),
      runner([vulkan](void **buffers) { return vulkan->run(buffers); }),
      temporaries(temporariesOf(vulkan->gpuPlan())), vulkan(vulkan) {}

Expected<void> Program::launch(const std::vector<uint64_t> &deviceBuffers) const {
  if (launcher)
    return launcher(deviceBuffers);
  if (vulkan)
    return makeError(ErrorKind::InvalidArgument,
                     "a Vulkan program launches on device buffers through a VulkanExecutor");
  std::vector<void *> pointers;
  for (uint64_t address : deviceBuffers)
    pointers.push_back(reinterpret_cast<void *>(address));
  return runner(pointers.data());
}

Engine::Engine(DeviceId id, DiskCacheConfig diskConfig)
    : deviceId(id), disk(std::move(diskConfig), kBuildId) {}
Engine::~Engine() = default;

Expected<std::unique_ptr<Engine>> Engine::create(DeviceId device) {
  auto disk = DiskCacheConfig::fromEnvironment();
  if (!disk)
    return std::unexpected(disk.error());
  return create(device, std::move(*disk));
}

Expected<std::unique_ptr<Engine>> Engine::create(DeviceId device, DiskCacheConfig disk) {
  std::unique_ptr<Engine> engine(new Engine(device, std::move(disk)));
  switch (device.type) {
  case DeviceType::Cpu: {
    if (device.index != 0)
      return makeError(ErrorKind::InvalidArgument,
                       "device " + device.toString() +
                           " does not exist (one CPU device: cpu:0)");
    auto cpu = CpuDevice::create();
    if (!cpu)
      return std::unexpected(cpu.error());
    engine->cpu = std::move(*cpu);
    return engine;
  }
  case DeviceType::Cuda: {
    auto cuda = CudaDevice::create(device.index);
    if (!cuda)
      return std::unexpected(cuda.error());
    engine->cuda = std::move(*cuda);
    return engine;
  }
  case DeviceType::Vulkan: {
    auto vulkan = VulkanDevice::create(device.index);
    if (!vulkan)
      return std::unexpected(vulkan.error());
    engine->vulkan = std::move(*vulkan);
    return engine;
  }
  }
  return makeError(ErrorKind::InvalidArgument, "unknown device type");
}

DeviceCapabilities Engine::capabilities() const {
  if (cuda)
    return DeviceCapabilities::cuda(cuda->properties().computeMajor,
                                    cuda->properties().computeMinor);
  if (vulkan)
    return DeviceCapabilities::vulkan(vulkan->properties());
  return DeviceCapabilities::cpu();
}

namespace {
std::atomic<size_t> mlirContexts = 0;
} // namespace

size_t Engine::mlirContextsCreated() { return mlirContexts; }

Compiler &Engine::compiler() {
  if (!compilerInstance) {
    compilerInstance = std::make_unique<Compiler>();
    ++mlirContexts;
  }
  return *compilerInstance;
}

const char *Engine::binaryKind() const { return cuda ? "cuda" : vulkan ? "vulkan" : "cpu"; }

std::string Engine::targetFingerprint() const {
  if (cuda)
    return "cuda-" + cuda->properties().chip();
  if (vulkan)
    return vulkan->properties().fingerprint();
  return cpu->fingerprint();
}

Expected<std::shared_ptr<Program>> Engine::load(const CachedProgram &cached) {
  if (cuda) {
    auto program = CudaProgram::load(*cuda, cached.plan);
    if (!program)
      return std::unexpected(program.error());
    std::shared_ptr<CudaProgram> shared = std::move(*program);
    return std::make_shared<Program>(
        cached.program, [shared](void **buffers) { return shared->run(buffers); },
        [shared](const std::vector<uint64_t> &buffers) { return shared->launchAll(buffers); },
        temporariesOf(shared->gpuPlan()));
  }
  if (vulkan) {
    auto program = VulkanProgram::load(*vulkan, cached.plan, cached.pipelineCache);
    if (!program)
      return std::unexpected(program.error());
    return std::make_shared<Program>(cached.program,
                                     std::shared_ptr<VulkanProgram>(std::move(*program)));
  }
  auto executable = cpu->load(cached.object);
  if (!executable)
    return std::unexpected(executable.error());
  return std::make_shared<Program>(
      cached.program, [exe = std::move(*executable)](void **buffers) -> Expected<void> {
        exe->run(buffers);
        return {};
      });
}

Expected<std::shared_ptr<Program>> Engine::build(std::string_view source,
                                                 const CompileOptions &options,
                                                 CachedProgram &cached) {
  CompileOptions target = options;
  if (cuda || vulkan) {
    Expected<CompiledGpuProgram> compiled = CompiledGpuProgram{};
    if (cuda) {
      target.chip = cuda->properties().chip();
      compiled = compiler().compileForCuda(source, target);
    } else {
      target.vulkan = VulkanTarget::of(vulkan->properties());
      compiled = compiler().compileForVulkan(source, target);
    }
    if (!compiled)
      return std::unexpected(compiled.error());
    cached.plan = std::move(compiled->plan);
    cached.program = std::move(*compiled);
  } else {
    auto compiled = compiler().compileForCpu(source, options);
    if (!compiled)
      return std::unexpected(compiled.error());
    cached.object = std::move(compiled->object);
    cached.program = std::move(*compiled);
  }
  // CUDA: cubins, so that no later load JITs PTX again (a module ptxas
  // assembled already is one: an ELF file).
  if (cuda) {
    auto start = std::chrono::steady_clock::now();
    for (std::string &module : cached.plan.modules)
      if (!module.starts_with("\x7f" "ELF")) {
        auto cubin = cuda->compileToCubin(module);
        if (!cubin)
          return std::unexpected(cubin.error());
        module = std::move(*cubin);
      }
    cached.program.stageTimes.push_back(
        {"cubin", std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                      .count()});
  }
  auto program = load(cached);
  if (!program)
    return program;
  if (vulkan) {
    auto data = (*program)->vulkanProgram()->pipelineCacheData();
    if (!data)
      return std::unexpected(data.error());
    cached.pipelineCache = std::move(*data);
  }
  return program;
}

std::shared_ptr<Program> Engine::loadFromDisk(const CacheKey &key) {
  auto entry = disk.load(key);
  if (!entry)
    return nullptr;
  auto cached = decodeCachedProgram(binaryKind(), *entry);
  if (!cached) {
    disk.reportBad(key, cached.error().message);
    return nullptr;
  }
  auto program = load(*cached);
  if (!program) {
    disk.reportBad(key, "it does not load: " + program.error().message);
    return nullptr;
  }
  ++diskHits;
  return *program;
}

Expected<std::shared_ptr<Program>> Engine::compile(std::string_view source,
                                                   const CompileOptions &options) {
  std::lock_guard lock(mutex);
  std::string target = targetFingerprint();
  std::string codegen = options.codegenKey();
  // CPU kernels are generated for the machine's thread count by default.
  if (cpu && options.numThreads == 0)
    codegen += ",hardware_threads=" + std::to_string(std::thread::hardware_concurrency());
  std::string suffix = "|" + options.entry + "|" + target + "|" + codegen + "|" + KILN_VERSION;
  auto hash = [](std::string_view text) {
    return std::to_string(std::hash<std::string_view>{}(text));
  };
  auto diskKey = [&](const char *form, std::string_view text) {
    return CacheKey{target, {{"entry", options.entry}, {"codegen", codegen},
                             {form, std::string(text)}}};
  };
  // Fast path: this exact text was seen before, in this process or (no
  // MLIR either way) on disk. A dump request always compiles, so that
  // every stage is written.
  std::string textKey = "text:" + hash(source) + suffix;
  CacheKey textDiskKey = diskKey("program", source);
  bool dump = !options.dumpDir.empty();
  if (!dump) {
    if (auto it = cache.find(textKey); it != cache.end()) {
      ++hits;
      return it->second;
    }
    if (auto program = loadFromDisk(textDiskKey))
      return cache[textKey] = program;
  }
  // The key proper is the canonical IR, so reformatted text hits too.
  auto canonical = compiler().canonicalForm(source);
  if (!canonical) {
    // Let build() report the problem with locations.
    canonical = std::string(source);
  }
  std::string key = "ir:" + hash(*canonical) + suffix;
  CacheKey irDiskKey = diskKey("canonical", *canonical);
  if (!dump) {
    if (auto it = cache.find(key); it != cache.end()) {
      ++hits;
      cache[textKey] = it->second;
      return it->second;
    }
    if (auto program = loadFromDisk(irDiskKey)) {
      disk.storeAlias(textDiskKey, irDiskKey);
      return cache[key] = cache[textKey] = program;
    }
  }
  CachedProgram cached;
  auto program = build(source, options, cached);
  if (!program)
    return std::unexpected(program.error());
  ++compiles;
  CacheEntry entry = encodeCachedProgram(binaryKind(), cached);
  disk.store(irDiskKey, std::move(entry.metadata), std::move(entry.blobs));
  disk.storeAlias(textDiskKey, irDiskKey);
  cache[key] = cache[textKey] = *program;
  return *program;
}

} // namespace kiln
